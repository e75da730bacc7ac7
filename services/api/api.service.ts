/**
 * api: owns no tables. Serves HTTP with Fastify: parameter merging, authentication (through
 * billing), validation, the error envelope and routing to the services' actions; also
 * /openapi.json, /docs and the MCP endpoint /mcp (mcp-http.ts).
 */
import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { LoggerInstance } from 'moleculer';
import type { ServiceUnit } from '../shared/service-unit';
import type { Config } from '../shared/config';
import { buildHttpServer, OPENAPI_DOCUMENT_SCHEMA, openApiDocument, type RouteDef } from './http';
import { operationRoutes } from './operations';
import { ACCOUNT_ROUTES } from './routes';
import { AI_ROUTES } from './ai-routes';
import { imageAnalysisRoutes } from './image-analysis-routes';
import { researchRoutes } from './research-routes';
import { PROXY_ROUTES } from './proxy-routes';
import { STORAGE_ROUTES } from './storage-routes';
import { createFileStore, type FileStore } from '../shared/storage';
import { configRoutes } from './config-routes';
import { egressPolicyFor } from '../shared/egress';
import { snapRoutes } from './snap-routes';
import { signedLinkRoutes } from './signed-link-routes';
import { CHANGE_NOTIFICATION_ROUTES, WEBHOOK_ROUTES } from './webhook-routes';
import { ApiMetrics } from './metrics';
import { oauthRoutes } from './oauth-routes';
import { installMcpEndpoint, mcpRoutes, withMcpEndpoint } from './mcp-http';
import { installConsole } from './console/console';
import { defineService } from '../shared/define-service';
import { SETTLE_RETRY_MS } from '../billing/public/credits';
import { snapTiming } from '../capture/public/snap-timing';

export function apiRoutes(
  store: FileStore,
  config: Pick<Config, 'allowPrivateNetworks' | 'capture' | 'metricsToken' | 'introspectionClient' | 'ai' | 'baseUrl'>,
): RouteDef[] {
  const policy = egressPolicyFor(config);
  const timing = snapTiming(config, SETTLE_RETRY_MS);
  return [
    ...operationRoutes(config),
    ...ACCOUNT_ROUTES,
    ...snapRoutes(store, policy, timing),
    ...signedLinkRoutes(store, policy, timing, config.baseUrl),
    ...configRoutes(store, policy),
    ...AI_ROUTES,
    ...imageAnalysisRoutes(policy, config),
    ...researchRoutes(policy),
    ...PROXY_ROUTES,
    ...STORAGE_ROUTES,
    ...WEBHOOK_ROUTES,
    ...CHANGE_NOTIFICATION_ROUTES,
    ...oauthRoutes(config),
    ...mcpRoutes(config),
  ];
}

export interface ApiHandle {
  /**
   * Starts answering HTTP. Called by startSystem once every service of this process has
   * started, so the first request never finds a local service still warming up.
   */
  listen(): Promise<void>;
  /** The port it listens on (the one chosen when PORT=0). */
  port(): number;
}

export function apiService(deps: { config: Readonly<Config>; store?: FileStore }): ServiceUnit<ApiHandle> {
  const { config } = deps;
  let app: FastifyInstance;
  let store: FileStore;
  let port = config.port;
  let logger: LoggerInstance;
  const metrics = new ApiMetrics();
  const schema = defineService('api', {
    actions: {
      metrics: () => metrics.snapshot(),
    },
    created() {
      logger = this.logger;
      store = deps.store ?? createFileStore(config);
      const served: RouteDef = {
        method: 'GET',
        url: '/openapi.json',
        summary: 'This document.',
        tag: 'operations',
        auth: false,
        response: OPENAPI_DOCUMENT_SCHEMA,
        errors: [],
        handler: async () => document,
      };
      const routes = [...apiRoutes(store, config), served];
      const document = withMcpEndpoint(openApiDocument(routes, config));
      app = buildHttpServer(this.broker, config, routes, metrics);
      installMcpEndpoint(app, { broker: this.broker, config, document, metrics });
      // The web console (services/api/console/): pages for people, from the same actions as the API.
      installConsole(app, { broker: this.broker, config });
      app.register(swagger, { mode: 'static', specification: { document: document as never } });
      app.register(swaggerUi, { routePrefix: '/docs' });
    },
    async stopped() {
      await app.close();
      await store.close();
    },
  });
  const handle: ApiHandle = {
    async listen() {
      await app.listen({ port: config.port, host: config.host });
      const address = app.server.address();
      port = typeof address === 'object' && address ? address.port : config.port;
      logger.info(`HTTP listening on ${config.host}:${port}`);
    },
    port: () => port,
  };
  return { schema, handle };
}
