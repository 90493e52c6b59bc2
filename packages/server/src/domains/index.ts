import type { FastifyInstance } from 'fastify';
import type { Services } from '../compose.js';
import { auditRoutes } from './audit/audit.routes.js';
import { environmentsRoutes } from './environments/environments.routes.js';
import { secretsRoutes } from './secrets/secrets.routes.js';
import { invitationsRoutes } from './members/invitations/invitations.routes.js';
import { membersRoutes } from './members/members.routes.js';
import { projectsRoutes } from './projects/projects.routes.js';
import { identityRoutes } from './identity/identity.routes.js';
import { vaultRoutes } from './vault/vault.routes.js';
import { tokensRoutes } from './tokens/tokens.routes.js';
import { keyTrustRoutes } from './key-trust/key-trust.routes.js';
import { membershipChainRoutes } from './membership-chain/membership-chain.routes.js';
import { webhooksRoutes } from './webhooks/webhooks.routes.js';
import { overridesRoutes } from './overrides/overrides.routes.js';
import { eventsRoutes } from './events/events.routes.js';

/** What a `/v1` route plugin is given: the services (and limits) it may call. */
type V1Deps = Services & { rekeyBodyLimitBytes: number };

type DomainRoutes = (app: FastifyInstance, deps: V1Deps) => Promise<void>;

/** The `/v1` domains, registered in this order under the `/v1` prefix. One line per domain. */
export const V1_DOMAINS: DomainRoutes[] = [
  identityRoutes,
  projectsRoutes,
  membersRoutes,
  invitationsRoutes,
  environmentsRoutes,
  secretsRoutes,
  auditRoutes,
  vaultRoutes,
  tokensRoutes,
  keyTrustRoutes,
  membershipChainRoutes,
  webhooksRoutes,
  overridesRoutes,
  eventsRoutes,
];
