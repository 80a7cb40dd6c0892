# Atrium image for docker-compose and scale-out. Node 24 comes from the base image here.
# Checked without a Docker engine by scripts/check-dockerfile.ts (run by .ci/run): rules read from this
# file, and its RUN steps executed in a clean copy of the repository.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The data directory is created here and copied with its owner below: the runtime stage runs no RUN.
RUN npx nest build && npm prune --omit=dev --no-audit --no-fund && mkdir -p /app/data

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    WORKER_HTTP_PORT=3001 \
    DATA_DIR=/app/data
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/package.json ./package.json
# The embedded default (no DATABASE_URL) and the generated secrets live here: writable by the app user.
COPY --from=build --chown=node:node /app/data ./data
USER node
VOLUME ["/app/data"]
EXPOSE 3000 3001
# Liveness of either role: the API on PORT, a worker (APP_ROLE=worker) on WORKER_HTTP_PORT.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["node", "dist/src/healthcheck.js"]
# bench:gateway starts its gateway with this CMD's Node flags, so it measures what runs here. Both bound the
# heap under load (issue 22): on a large machine V8 otherwise takes a 64 MB semi-space (128 MB of young
# generation) and lets the old generation grow to ~4x what is live before a full GC, ~520 MB RSS under the
# bench against ~175 MB at rest. A 16 MB semi-space and 1.3x old-generation growth keep it near 240 MB; since
# list_tasks allocates a fraction of what it did (session 9), the more frequent collections cost little CPU;
# see README, bench:gateway.
CMD ["node", "--max-semi-space-size=16", "--heap-growing-percent=30", "dist/src/main.js"]
