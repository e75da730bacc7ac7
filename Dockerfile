# One image for every service; SERVICES selects what a container runs.
FROM node:20.19-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev

FROM node:20.19-bookworm-slim
WORKDIR /app
# EasyList and EasyPrivacy for no_ads / no_tracking, as Debian ships them (no browser needed).
RUN apt-get update && apt-get install -y --no-install-recommends webext-ublock-origin-chromium && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/package.json ./package.json
# DATA_DIR: the stored files when STORAGE_URL is unset ($DATA_DIR/files), owned by the user the
# service runs as (/app is root's). docker-compose.yml mounts one volume there for every
# service that stores or serves files; a named volume starts as a copy of this folder, owner included.
ENV DATA_DIR=/app/data
RUN mkdir -p /app/data/files && chown -R node:node /app/data
USER node
EXPOSE 3000
CMD ["node", "dist/bin/serve.js"]
