// The OAuth 2.0 / OpenID server runway's connected-account tests connect to: oidc-provider
// (pinned in package-lock.json) with one confidential client, PKCE required, and its
// development login and consent pages (any login name is accepted; the name is the `sub`).
// PORT, CLIENT_SECRET and REDIRECT_URI come from the test; it listens on 127.0.0.1 only and
// prints "listening" once it does.
//
// Refresh tokens are issued on every authorization and rotate on every use: a refresh token
// used twice is refused and revokes the whole grant (oidc-provider's reuse detection), as a
// strict provider does. A login starting with "expiring-" gets access tokens that expire in
// EXPIRING_TTL seconds (sooner than runway's refresh margin: every use refreshes first).
// A token can be revoked (RFC 7009, POST /token/revocation, published as the metadata's
// revocation_endpoint): oidc-provider then revokes every token of its grant (the access tokens
// too, as RFC 7009 §2.1 asks), keeping the grant itself. GET /test/grants answers how many
// token requests of each grant type succeeded and failed, for the tests to count refreshes.
//
// For MCP servers with their own authorization (`[[mcp]] auth = "oauth"`): open dynamic client
// registration (RFC 7591; GET /test/registrations counts the clients registered), resource
// indicators (RFC 8707: a token asked for an MCP endpoint on loopback, http://127.0.0.1:PORT/mcp,
// has that endpoint as its audience and the scope `mcp`), and token introspection (RFC 7662)
// for the MCP server, as the confidential client `mcp-resource-server` (secret CLIENT_SECRET).
// A request without `resource` gets the tokens it always did.
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.PORT);
const EXPIRING_TTL = 30;
const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [
    {
      client_id: 'runway',
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [process.env.REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
    {
      client_id: 'mcp-resource-server',
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [],
      grant_types: [],
      response_types: [],
    },
  ],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    revocation: { enabled: true },
    registration: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        if (/^http:\/\/127\.0\.0\.1:\d+\/mcp$/.test(resource)) {
          return { scope: 'mcp', audience: resource, accessTokenFormat: 'opaque', accessTokenTTL: 3600 };
        }
        throw new errors.InvalidTarget();
      },
    },
  },
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  // Revoking a token (RFC 7009) keeps the grant (its tokens are revoked all the same); a
  // refresh token used twice revokes the whole grant.
  revokeGrantPolicy: (ctx) => ctx.oidc.route !== 'revocation',
  ttl: {
    AccessToken: (ctx, token) => (String(token.accountId).startsWith('expiring-') ? EXPIRING_TTL : 3600),
  },
});

const grants = { succeeded: {}, failed: {} };
const count = (table) => (ctx) => {
  const type = ctx.oidc.params?.grant_type ?? 'unknown';
  table[type] = (table[type] ?? 0) + 1;
};
provider.on('grant.success', count(grants.succeeded));
provider.on('grant.error', count(grants.failed));
let registrations = 0;
provider.on('registration_create.success', () => {
  registrations += 1;
});
provider.use(async (ctx, next) => {
  if (ctx.method === 'GET' && ctx.path === '/test/grants') {
    ctx.body = grants;
    return;
  }
  if (ctx.method === 'GET' && ctx.path === '/test/registrations') {
    ctx.body = { registrations };
    return;
  }
  await next();
});

provider.listen(port, '127.0.0.1');
process.stdout.write('listening\n');
// Everything else it logs goes to stderr: the test reads stdout only up to the line above.
console.log = console.info = (...args) => process.stderr.write(`${args.join(' ')}\n`);
