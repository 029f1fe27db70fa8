// The engine's verdict on a config against its target, for handlers whose views keep configs
// without their rules and targets without their schemas (views/projection.ts). The verdict needs
// both whole: they are read again from the bus once per revision of the config and of the target,
// compiled, and the verdict kept per target until either changes. The decision itself stays
// synchronous on the view: a handler `prepare`s the verdict first, then decides with `of`.
import type { ConversionConfig } from '../api/conversion-config.ts';
import { TARGET_OF_CONFIG } from '../api/resources.ts';
import type { RecordedObject } from '../bus/messages.ts';
import type { ObjectKey } from '../bus/subjects.ts';
import type { ObjectView } from '../bus/view.ts';
import { type ConfigValidation, validateConfig } from '../core/config-validation.ts';
import { configKeyOf, readConfigSources, targetKeyOf, type WholeReader } from './config-sources.ts';

export type VerdictView = Pick<ObjectView, 'record'> & WholeReader;

export class ConfigVerdicts {
  /** Per target name: the revisions the verdict was compiled from, and the verdict. */
  private readonly byTarget = new Map<string, { revision: string; verdict: ConfigValidation }>();
  private readonly withVerdicts: boolean;

  /** `verdicts`: also derive the per-spoke and per-rule verdicts (what the config-status handler writes). */
  constructor(opts: { verdicts?: boolean } = {}) {
    this.withVerdicts = opts.verdicts ?? false;
  }

  /**
   * The verdict on `config` (as the view holds it) against its target as the view holds it;
   * undefined only while the view keeps either projected and this revision was not `prepare`d. A
   * target recorded without its content (too large for the bus) has no versions to compile
   * against: missing.
   */
  of(view: Pick<ObjectView, 'record'>, config: ConversionConfig): ConfigValidation | undefined {
    const target = targetOf(config);
    const record = view.record(target.key);
    if (record === undefined || record.omitted) return missing(target);
    const revision = revisionOf(config, record.object);
    const held = this.byTarget.get(target.key.name);
    if (held?.revision === revision) return held.verdict;
    if (record.projected || view.record(configKeyOf(config))?.projected) return undefined;
    return this.compile(revision, config, target, record.object);
  }

  /** Makes `of` answer for the view as it is now: reads the whole config and target when the verdict is not known. */
  async prepare(view: VerdictView, config: ConversionConfig): Promise<void> {
    const target = targetOf(config);
    const record = view.record(target.key);
    if (record === undefined) {
      this.byTarget.delete(target.key.name);
      return;
    }
    if (this.of(view, config) !== undefined) return;
    const sources = await readConfigSources(view, config);
    if (sources.kind === 'unreadable') throw new Error(sources.why);
    // Kept under the revisions the view holds: the bus may answer with newer records than the
    // view's, and the verdict on those stands in until the view catches up and asks again.
    this.compile(revisionOf(config, record.object), sources.config, target, sources.target);
  }

  private compile(
    revision: string,
    config: ConversionConfig,
    target: Target,
    whole: RecordedObject,
  ): ConfigValidation {
    const verdict = validateConfig(
      config.spec,
      { kind: target.kind, name: target.key.name, live: whole },
      { verdicts: this.withVerdicts },
    );
    this.byTarget.set(target.key.name, { revision, verdict });
    return verdict;
  }
}

interface Target {
  kind: string;
  key: ObjectKey;
}

function targetOf(config: ConversionConfig): Target {
  return { kind: TARGET_OF_CONFIG[config.kind].kind, key: targetKeyOf(config) };
}

function missing(target: Target): ConfigValidation {
  return { verdict: 'TargetMissing', targetKind: target.kind, targetName: target.key.name };
}

/**
 * What a verdict is compiled from: the config's spec and the target's, by uid and generation (the
 * apiserver bumps a generation on every change of the spec and never for status, so a status
 * write compiles nothing; a repoint of the target's spec.conversion does, once).
 */
function revisionOf(config: ConversionConfig, target: RecordedObject): string {
  return `${objectRevision(config)}|${objectRevision(target)}`;
}

/** An object's spec revision: uid and generation; any write counts without a generation. */
export function objectRevision(object: { metadata: object }): string {
  const { uid, generation, resourceVersion } = object.metadata as {
    uid?: string;
    generation?: number;
    resourceVersion?: string;
  };
  return typeof generation === 'number' ? `${uid}/g${generation}` : `${uid}/rv${resourceVersion}`;
}
