// The differential corpus: every conversion config the reference operator's source snapshot holds
// (TeraSky-OSS/declarative-conversion-operator at the commit scripts/lib/build-reference.sh pins),
// unreduced, each with the target versions and the objects that go with it. Read from the
// unpacked source tree the build keeps (SWITCHYARD_REFERENCE_SOURCE_DIR).
//
// Where the configs are:
//   * YAML files anywhere in the tree (examples/**, internal/cli/testdata/** — convctl's fixtures,
//     which exercise the engine strategy by strategy —, test/e2e/testdata, config/samples): every
//     XRDConversionConfig / CRDConversionConfig document. Its target is the XRD or CRD of the
//     name it gives, looked for in the config's own directory, then each parent directory up to
//     the root; one case per target document found (the walkthrough's stage 6 has two XRDs of the
//     same name). A walkthrough mistake (examples/crossplane-xr-multiversion/mistakes/NN-*.yaml)
//     targets the XRD of its stage (the directory NN-*). A config whose target is nowhere in the
//     snapshot is still a case, with versions named by the config and no schema.
//   * YAML blocks of docs/**/*.md: full configs (paired with an XRD/CRD of the same page), and rule
//     lists (`- strategy: …`, or a `rules:` mapping). The strategy pages give, per `## ` section,
//     the hub and spoke schemas as tabs (`=== "Hub schema (v3)"`, fragments rooted at the object's
//     properties: `spec: {properties: …}`) and objects (`=== "Hub (v3)"`); a rule list becomes a
//     config with that section's hub and spoke versions, against those schemas where the section
//     gives them and with no schema where it does not.
//
// The objects of a case are the objects of the target's group and kind at one of its versions,
// found in the config's directory and in those of its subdirectories that hold no config of their
// own (samples/); for the multi-version walkthrough, anywhere in the walkthrough (its objects are
// spread over the stage directories, samples/, live/ and gitops/apps/). For a docs case, the
// objects of the same section (or page).
//
// What is synthesized, and only that: a docs rule list's spec (hubVersion, one spoke, and a
// placeholder targetXRD name, which Switchyard's spec schema requires and neither engine reads
// when it converts); the openAPIV3Schema around a docs schema fragment (`type: object` on the
// root and on each top-level field that omits it); a docs object's apiVersion and kind where the
// block omits them (from the tab's version, and the page's kind, XWidget of example.org, as
// the strategy pages' own full examples spell them).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { TargetVersion } from '../../src/engine/compile.ts';
import { isJsonObject, type JsonObject } from '../../src/engine/json.ts';
import type { TargetSchema } from '../../src/engine/schema.ts';
import { targetVersions } from '../../src/engine/target-versions.ts';

export interface CorpusObject {
  object: JsonObject;
  /** The version the object is at: its apiVersion's. */
  version: string;
  /** Where it came from, relative to the source root. */
  source: string;
}

export interface CorpusCase {
  name: string;
  /** The config's spec, as written (or, for a docs rule list, as synthesized around it). */
  spec: JsonObject;
  versions: TargetVersion[];
  objects: CorpusObject[];
  /** Files (relative to the source root) the config, target and objects come from. */
  sources: string[];
  /** What the loader had to assume for this case (no target found, no schema in the doc, …). */
  notes: string[];
}

export interface Corpus {
  root: string;
  cases: CorpusCase[];
  /** YAML that did not parse, or a config block that could not be used: reported, not dropped silently. */
  skipped: { source: string; why: string }[];
}

/** The reference's source tree the build unpacked, or a clear error. */
export function referenceSourceDir(): string {
  const dir = process.env.SWITCHYARD_REFERENCE_SOURCE_DIR;
  if (!dir)
    throw new Error(
      'SWITCHYARD_REFERENCE_SOURCE_DIR is not set: run the tests through scripts/test.sh, or `source scripts/lib/bootstrap.sh && ensure_reference` first (it unpacks the reference source tree and exports the variable)',
    );
  return dir;
}

const CONFIG_KINDS = new Set(['XRDConversionConfig', 'CRDConversionConfig']);
const CONFIG_GROUP = 'terasky.com';
const TARGET_KINDS: Record<string, string> = {
  CompositeResourceDefinition: 'apiextensions.crossplane.io',
  CustomResourceDefinition: 'apiextensions.k8s.io',
};
const WALKTHROUGH = ['examples', 'crossplane-xr-multiversion'].join(sep);
/** Not YAML documents a user applies: Helm templates, generated CRDs of the operator itself, CI. */
const SKIPPED_DIRS = new Set(['.git', '.github', 'charts', 'node_modules']);
const SKIPPED_PATHS = new Set([join('config', 'crd'), join('config', 'rbac'), join('config', 'webhook')]);

const DOCS_GROUP = 'example.org';
const DOCS_KIND = 'XWidget';
const DOCS_TARGET = 'xwidgets.example.org';

export function loadCorpus(root: string = referenceSourceDir()): Corpus {
  const skipped: Corpus['skipped'] = [];
  const files = yamlFiles(root, root);
  const documents = files.flatMap((file) => readYamlDocuments(root, file, skipped));
  const cases = [...fileCases(documents), ...docsCases(root, skipped)];
  return { root, cases, skipped };
}

// --- YAML files

interface YamlDocument {
  /** Relative to the source root. */
  file: string;
  value: JsonObject;
}

function yamlFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    const rel = relative(root, path);
    if (SKIPPED_DIRS.has(entry) || SKIPPED_PATHS.has(rel)) continue;
    if (statSync(path).isDirectory()) out.push(...yamlFiles(root, path));
    else if (/\.ya?ml$/.test(entry)) out.push(rel);
  }
  return out;
}

function readYamlDocuments(root: string, file: string, skipped: Corpus['skipped']): YamlDocument[] {
  const out: YamlDocument[] = [];
  for (const [i, doc] of parseAllDocuments(readFileSync(join(root, file), 'utf8')).entries()) {
    if (doc.errors.length > 0) {
      // Only a document that might matter is worth a report: one naming a kind.
      if (/^kind:/m.test(doc.toString()))
        skipped.push({ source: `${file}#${i}`, why: doc.errors[0]?.message ?? '' });
      continue;
    }
    const value: unknown = doc.toJS();
    if (isJsonObject(value)) out.push({ file, value });
  }
  return out;
}

function groupOf(apiVersion: unknown): string | undefined {
  if (typeof apiVersion !== 'string') return undefined;
  const slash = apiVersion.lastIndexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

function versionOf(apiVersion: unknown): string | undefined {
  if (typeof apiVersion !== 'string') return undefined;
  return apiVersion.slice(apiVersion.lastIndexOf('/') + 1);
}

function isConfig(doc: JsonObject): boolean {
  return (
    typeof doc.kind === 'string' && CONFIG_KINDS.has(doc.kind) && groupOf(doc.apiVersion) === CONFIG_GROUP
  );
}

function isTarget(doc: JsonObject): boolean {
  if (typeof doc.kind !== 'string' || TARGET_KINDS[doc.kind] !== groupOf(doc.apiVersion)) return false;
  const spec = isJsonObject(doc.spec) ? doc.spec : {};
  return spec.group !== CONFIG_GROUP;
}

/** The name of the config's target and the kind of document that defines it. */
function targetOf(spec: JsonObject): { name: string; kind: string } | undefined {
  for (const [field, kind] of [
    ['targetXRD', 'CompositeResourceDefinition'],
    ['targetCRD', 'CustomResourceDefinition'],
  ] as const) {
    const ref = spec[field];
    if (isJsonObject(ref) && typeof ref.name === 'string') return { name: ref.name, kind };
  }
  return undefined;
}

function nameOf(doc: JsonObject): string | undefined {
  return isJsonObject(doc.metadata) && typeof doc.metadata.name === 'string' ? doc.metadata.name : undefined;
}

/** The group and kind a target's objects have. */
function objectTypeOf(target: JsonObject): { group: string; kind: string } | undefined {
  const spec = isJsonObject(target.spec) ? target.spec : undefined;
  const names = spec && isJsonObject(spec.names) ? spec.names : undefined;
  if (!spec || typeof spec.group !== 'string' || !names || typeof names.kind !== 'string') return undefined;
  return { group: spec.group, kind: names.kind };
}

/** Directories to look for a config's target in, nearest first. */
function targetSearchDirs(file: string): string[] {
  const dirs: string[] = [];
  const dir = dirname(file);
  // A walkthrough mistake targets its stage's XRD: mistakes/04-….yaml → 04-add-v3/.
  const stage = /^(\d\d)-/.exec(basename(file));
  if (stage && basename(dir) === 'mistakes' && dirname(dir) === WALKTHROUGH) {
    dirs.push(join(WALKTHROUGH, `${stage[1]}-`));
  }
  for (let d = dir; ; d = dirname(d)) {
    dirs.push(d);
    if (d === '.' || d === dirname(d)) break;
  }
  return dirs;
}

function inSearchDir(file: string, dir: string): boolean {
  // A trailing "-" names a stage directory by its number prefix.
  if (dir.endsWith('-')) {
    const parent = dirname(dir);
    return (
      dirname(file) !== parent &&
      dirname(dirname(file)) === parent &&
      basename(dirname(file)).startsWith(basename(dir))
    );
  }
  return dirname(file) === dir;
}

function fileCases(documents: readonly YamlDocument[]): CorpusCase[] {
  const configs = documents.filter((d) => isConfig(d.value));
  const targets = documents.filter((d) => isTarget(d.value));
  const configDirs = new Set(configs.map((c) => dirname(c.file)));
  const cases: CorpusCase[] = [];
  for (const config of configs) {
    const spec = isJsonObject(config.value.spec) ? config.value.spec : {};
    const wanted = targetOf(spec);
    let found: YamlDocument[] = [];
    if (wanted) {
      for (const dir of targetSearchDirs(config.file)) {
        found = targets.filter(
          (t) => inSearchDir(t.file, dir) && t.value.kind === wanted.kind && nameOf(t.value) === wanted.name,
        );
        if (found.length > 0) break;
      }
    }
    const configName = `${config.file}${nameOf(config.value) ? ` (${nameOf(config.value)})` : ''}`;
    if (found.length === 0) {
      cases.push({
        name: configName,
        spec,
        versions: versionsNamedBy(spec),
        objects: [],
        sources: [config.file],
        notes: [
          `no ${wanted?.kind ?? 'target'} named ${wanted?.name ?? '(none)'} in the snapshot: versions named by the config, without schemas`,
        ],
      });
      continue;
    }
    for (const target of found) {
      const versions = targetVersions(target.value);
      const objects = objectsFor(target.value, versions, objectScope(config.file, documents, configDirs));
      cases.push({
        name: found.length > 1 ? `${configName} → ${target.file}` : configName,
        spec,
        versions,
        objects,
        sources: [config.file, target.file, ...new Set(objects.map((o) => o.source))],
        notes: [],
      });
    }
  }
  return cases;
}

/** Documents that may hold a config's objects (see the header). */
function objectScope(
  configFile: string,
  documents: readonly YamlDocument[],
  configDirs: ReadonlySet<string>,
): YamlDocument[] {
  const dir = dirname(configFile);
  if (dir === WALKTHROUGH || dir.startsWith(WALKTHROUGH + sep)) {
    return documents.filter((d) => d.file.startsWith(WALKTHROUGH + sep));
  }
  return documents.filter((d) => {
    const fileDir = dirname(d.file);
    if (fileDir === dir) return true;
    if (!fileDir.startsWith(dir === '.' ? '' : dir + sep)) return false;
    // A subdirectory on the way down that holds a config of its own belongs to that config.
    for (let d2 = fileDir; d2 !== dir && d2 !== '.'; d2 = dirname(d2)) if (configDirs.has(d2)) return false;
    return true;
  });
}

function objectsFor(
  target: JsonObject,
  versions: readonly TargetVersion[],
  scope: readonly YamlDocument[],
): CorpusObject[] {
  const type = objectTypeOf(target);
  if (!type) return [];
  const names = new Set(versions.map((v) => v.name));
  const seen = new Set<string>();
  const out: CorpusObject[] = [];
  for (const doc of scope) {
    const { value } = doc;
    const version = versionOf(value.apiVersion);
    if (groupOf(value.apiVersion) !== type.group || value.kind !== type.kind || !version) continue;
    if (!names.has(version)) continue;
    const key = JSON.stringify(value);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ object: value, version, source: doc.file });
  }
  return out;
}

/** Versions a config names (hub: storage; spokes: served), without schemas. */
function versionsNamedBy(spec: JsonObject): TargetVersion[] {
  const hub = typeof spec.hubVersion === 'string' ? spec.hubVersion : undefined;
  const spokes = Array.isArray(spec.spokes)
    ? spec.spokes.flatMap((s) => (isJsonObject(s) && typeof s.version === 'string' ? [s.version] : []))
    : [];
  const names = [...new Set([...(hub ? [hub] : []), ...spokes])];
  return names.map((name) => ({ name, served: true, storage: name === hub, schema: undefined }));
}

// --- docs/**/*.md

interface DocBlock {
  section: string;
  tab: string | undefined;
  line: number;
  value: unknown;
}

function markdownFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(root, dir)).sort()) {
    const rel = join(dir, entry);
    if (statSync(join(root, rel)).isDirectory()) out.push(...markdownFiles(root, rel));
    else if (entry.endsWith('.md')) out.push(rel);
  }
  return out;
}

/** The YAML blocks of a page, with the `## ` section and `=== "…"` tab each sits under. */
function docBlocks(text: string, file: string, skipped: Corpus['skipped']): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  let section = '';
  let tab: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const heading = /^(#+)\s+(.*)$/.exec(line);
    if (heading) {
      if (heading[1] === '##') section = heading[2] ?? '';
      tab = undefined;
      continue;
    }
    const tabLine = /^\s*===\s+"(.*)"\s*$/.exec(line);
    if (tabLine) {
      tab = tabLine[1];
      continue;
    }
    const fence = /^(\s*)```ya?ml(?:\s.*)?$/.exec(line);
    if (!fence) continue;
    const indent = fence[1] ?? '';
    const body: string[] = [];
    const start = i + 1;
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] ?? ''); i++) {
      body.push(
        (lines[i] ?? '').startsWith(indent) ? (lines[i] ?? '').slice(indent.length) : (lines[i] ?? ''),
      );
    }
    // A block outside any tab (not indented) ends the tab group it follows.
    const blockTab = indent.length > 0 ? tab : undefined;
    if (indent.length === 0) tab = undefined;
    const docs = parseAllDocuments(body.join('\n'));
    for (const doc of docs) {
      if (doc.errors.length > 0) {
        if (/strategy:|hubVersion:/.test(doc.toString()))
          skipped.push({ source: `${file}:${start}`, why: doc.errors[0]?.message ?? '' });
        continue;
      }
      blocks.push({ section, tab: blockTab, line: start, value: doc.toJS() });
    }
  }
  return blocks;
}

const isRule = (v: unknown): v is JsonObject => isJsonObject(v) && typeof v.strategy === 'string';

/** The rules a block holds: a list of rules, or a `rules:` mapping; else undefined. */
function rulesOf(value: unknown): unknown[] | undefined {
  if (Array.isArray(value) && value.length > 0 && value.every(isRule)) return value;
  if (isJsonObject(value) && Object.keys(value).length === 1 && Array.isArray(value.rules)) {
    const rules = value.rules;
    if (rules.length > 0 && rules.every(isRule)) return rules;
  }
  return undefined;
}

const SCHEMA_TAB = /^(Hub|Spoke) schema \((v[^)]+)\)$/;
const OBJECT_TAB = /^(Hub|Spoke) \((v[^)]+)\)$/;

/** An openAPIV3Schema around a docs fragment rooted at the object's properties. */
function schemaFromFragment(fragment: unknown): TargetSchema | undefined {
  if (!isJsonObject(fragment)) return undefined;
  if ('type' in fragment || 'properties' in fragment) return { type: 'object', ...fragment } as TargetSchema;
  const properties: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fragment)) {
    properties[key] = isJsonObject(value) && !('type' in value) ? { type: 'object', ...value } : value;
  }
  return { type: 'object', properties } as TargetSchema;
}

function docObject(value: unknown, tabVersion: string, source: string): CorpusObject | undefined {
  if (!isJsonObject(value)) return undefined;
  const object: JsonObject = {
    ...(value.apiVersion === undefined ? { apiVersion: `${DOCS_GROUP}/${tabVersion}` } : {}),
    ...(value.kind === undefined ? { kind: DOCS_KIND } : {}),
    ...value,
  };
  const version = versionOf(object.apiVersion);
  return version ? { object, version, source } : undefined;
}

function docsCases(root: string, skipped: Corpus['skipped']): CorpusCase[] {
  const cases: CorpusCase[] = [];
  for (const file of markdownFiles(root, 'docs')) {
    const blocks = docBlocks(readFileSync(join(root, file), 'utf8'), file, skipped);
    cases.push(...docsPageCases(file, blocks));
  }
  return cases;
}

function docsPageCases(file: string, blocks: readonly DocBlock[]): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const pageTargets = blocks.flatMap((b) => (isJsonObject(b.value) && isTarget(b.value) ? [b.value] : []));
  const pageObjects = blocks.flatMap((b) =>
    isJsonObject(b.value) && !isConfig(b.value) && !isTarget(b.value) && b.tab === undefined
      ? [{ value: b.value, line: b.line }]
      : [],
  );
  const ruleBlocks = blocks.filter((b) => rulesOf(b.value) !== undefined);
  for (const block of blocks) {
    if (!isJsonObject(block.value) || !isConfig(block.value)) continue;
    const spec = isJsonObject(block.value.spec) ? block.value.spec : {};
    const wanted = targetOf(spec);
    const target = pageTargets.find((t) => t.kind === wanted?.kind && nameOf(t) === wanted?.name);
    const name = `${file}:${block.line} (${block.value.kind})`;
    if (!target) {
      cases.push({
        name,
        spec,
        versions: versionsNamedBy(spec),
        objects: [],
        sources: [file],
        notes: ['the page gives no schema for its target: versions named by the config, without schemas'],
      });
      continue;
    }
    const versions = targetVersions(target);
    const type = objectTypeOf(target);
    const objects = pageObjects.flatMap(({ value, line }) => {
      const version = versionOf(value.apiVersion);
      return type &&
        version &&
        groupOf(value.apiVersion) === type.group &&
        value.kind === type.kind &&
        versions.some((v) => v.name === version)
        ? [{ object: value, version, source: `${file}:${line}` }]
        : [];
    });
    cases.push({ name, spec, versions, objects, sources: [file], notes: [] });
  }
  for (const block of ruleBlocks) {
    const rules = rulesOf(block.value) ?? [];
    const inSection = blocks.filter((b) => b.section === block.section);
    const schemas = new Map<'Hub' | 'Spoke', { version: string; schema: TargetSchema | undefined }>();
    const objectVersions = new Map<'Hub' | 'Spoke', string>();
    const objects: CorpusObject[] = [];
    for (const b of inSection) {
      const schemaTab = b.tab ? SCHEMA_TAB.exec(b.tab) : null;
      if (schemaTab) {
        const side = schemaTab[1] as 'Hub' | 'Spoke';
        schemas.set(side, { version: schemaTab[2] ?? '', schema: schemaFromFragment(b.value) });
      }
      const objectTab = b.tab ? OBJECT_TAB.exec(b.tab) : null;
      if (objectTab) {
        const side = objectTab[1] as 'Hub' | 'Spoke';
        objectVersions.set(side, objectTab[2] ?? '');
        const object = docObject(b.value, objectTab[2] ?? '', `${file}:${b.line}`);
        if (object) objects.push(object);
      }
    }
    const notes: string[] = [];
    const hubVersion = schemas.get('Hub')?.version ?? objectVersions.get('Hub');
    const spokeVersion = schemas.get('Spoke')?.version ?? objectVersions.get('Spoke');
    const hub = hubVersion ?? 'v2';
    const spoke = spokeVersion ?? 'v1';
    if (!hubVersion || !spokeVersion)
      notes.push(
        `the section names no ${!hubVersion ? 'hub' : 'spoke'} version: ${hub} hub, ${spoke} spoke assumed`,
      );
    for (const side of ['Hub', 'Spoke'] as const)
      if (!schemas.get(side)?.schema) notes.push(`the section gives no ${side.toLowerCase()} schema`);
    const spec: JsonObject = {
      targetXRD: { name: DOCS_TARGET },
      hubVersion: hub,
      spokes: [{ version: spoke, rules }],
    };
    const versions: TargetVersion[] = [
      { name: hub, served: true, storage: true, schema: schemas.get('Hub')?.schema },
      { name: spoke, served: true, storage: false, schema: schemas.get('Spoke')?.schema },
    ];
    cases.push({
      name: `${file}:${block.line} (${block.section || 'rules'})`,
      spec,
      versions,
      objects: objects.filter((o) => o.version === hub || o.version === spoke),
      sources: [file],
      notes,
    });
  }
  return cases;
}
