# One Inlet server on the embedded store, its data in the /data volume:
#   docker build -t inlet . && docker run -p 127.0.0.1:8080:8080 -v inlet-data:/data inlet
# compose.yaml runs several on PostgreSQL and Redis; docs/production.md ("Docker") says more.

FROM node:20-slim AS build
# better-sqlite3 compiles itself when no prebuilt binary can be fetched.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# npm ci builds (prepare); the development packages go once it has.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

FROM node:20-slim
WORKDIR /app
# What the server reads at run time, owned by root: the process cannot change its own code.
COPY --from=build /app/package.json ./
COPY --from=build /app/bin ./bin
COPY --from=build /app/dist ./dist
COPY --from=build /app/docs ./docs
COPY --from=build /app/sdk/node/package.json ./sdk/node/package.json
COPY --from=build /app/sdk/node/dist ./sdk/node/dist
COPY --from=build /app/node_modules ./node_modules
RUN mkdir /data && chown node:node /data
ENV PATH=/app/bin:$PATH \
    INLET_DATA_DIR=/data \
    INLET_METRICS_HOST=0.0.0.0
VOLUME ["/data"]
USER node
EXPOSE 8080 9464
# /healthz answers while the process serves; a start that fills a large store's insert_ids takes seconds.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.INLET_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["inlet", "serve", "--host", "0.0.0.0"]
