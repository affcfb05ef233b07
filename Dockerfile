# walletflow: one image for the API, the worker, the sandbox and one-shot migrations.
# Debian slim, not Alpine: the Temporal SDK's native bridge has no musl build.

# 1. Dependencies, with the Prisma client generated (offline) and dev tools for the bundle.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/prisma-generate.ts scripts/
COPY prisma/schema.prisma prisma/
COPY prisma.config.ts ./
RUN npm install --no-audit --no-fund

# 2. The prebuilt workflow bundle (workers load it instead of bundling at start).
FROM deps AS build
COPY . .
RUN npx tsx scripts/bundle-workflows.ts dist/workflow-bundle.js && npm prune --omit=dev --no-audit --no-fund && npm install --no-save --no-audit --no-fund tsx

# 3. Runtime: sources run by tsx, production dependencies, a non-root user.
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js
WORKDIR /app
RUN groupadd --system walletflow && useradd --system --gid walletflow --home /app walletflow
COPY --from=build --chown=walletflow:walletflow /app /app
USER walletflow
EXPOSE 3000
# The API by default; the worker: `node --import tsx worker/main.ts`; migrations: `node --import tsx cli/main.ts migrate`.
CMD ["node", "--import", "tsx", "api/main.ts"]
