# The switchyard image: one binary, `switchyard <subcommand> …`, for every workload in deploy/.
#
# Build it with scripts/build-image.sh. The build context is a directory that script prepares from
# local artifacts, not the checkout: Node 24 from the project's cache (stripped of debug symbols)
# with the shared libraries it links against and their loader, the production node_modules, src/
# without its tests and package.json. No base image: both stages start FROM scratch, so building
# needs no registry, and the image holds nothing the process does not use (no shell, no package
# manager). Layers go from the slowest-changing (Node) to the fastest (src/): a new build of the
# same Node and lockfile adds only a few MB.

# Stage 1: the same files, run once as the image's user. Every subcommand's modules (the demo's
# aside: it needs the checkout) load from the production node_modules, which fails the build if one
# is missing, and V8's compile cache is filled for them. The cache is keyed by the Node version and
# the uid, so it is made as 65532.
FROM scratch AS compile-cache
LABEL dev.switchyard.build="compile-cache"
COPY base/ /
COPY node_modules/ /app/node_modules/
COPY app/ /app/
COPY --chown=65532:65532 compile-cache/ /app/.compile-cache/
USER 65532:65532
ENV NODE_ENV=production NODE_COMPILE_CACHE=/app/.compile-cache
RUN ["/usr/local/bin/node", "/app/src/cli/main.ts", "--version"]
RUN ["/usr/local/bin/node", "--input-type=module", "--eval", "const { commands } = await import('/app/src/cli/main.ts'); for (const [name, load] of Object.entries(commands)) if (name !== 'demo') await load();"]
# Node writes its cache files for their owner only; root will own them.
RUN ["/usr/local/bin/node", "--eval", "const fs = require('node:fs'); for (const f of fs.readdirSync('/app/.compile-cache', { recursive: true, withFileTypes: true })) fs.chmodSync(`${f.parentPath}/${f.name}`, f.isDirectory() ? 0o755 : 0o444);"]

# Stage 2: the image. Everything is owned by root and read-only to the process, which writes
# nothing (readOnlyRootFilesystem in deploy/): the compile cache is read, never updated.
FROM scratch
COPY base/ /
COPY node_modules/ /app/node_modules/
COPY app/ /app/
COPY --from=compile-cache --chown=0:0 /app/.compile-cache/ /app/.compile-cache/
USER 65532:65532
WORKDIR /app
ENV NODE_ENV=production NODE_COMPILE_CACHE=/app/.compile-cache
ENTRYPOINT ["/usr/local/bin/node", "/app/src/cli/main.ts"]
ARG VERSION=dev
LABEL org.opencontainers.image.title="switchyard" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      dev.switchyard.build="image"
