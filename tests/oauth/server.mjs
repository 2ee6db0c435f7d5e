// The OAuth 2.0 / OpenID server runway's connected-account tests connect to: oidc-provider
// (pinned in package-lock.json) with one confidential client, PKCE required, and its
// development login and consent pages (any login name is accepted; the name is the `sub`).
// PORT, CLIENT_SECRET and REDIRECT_URI come from the test; it listens on 127.0.0.1 only and
// prints "listening" once it does.
import Provider from 'oidc-provider';

const port = Number(process.env.PORT);
const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [
    {
      client_id: 'runway',
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [process.env.REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
  ],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
});
provider.listen(port, '127.0.0.1');
process.stdout.write('listening\n');
// Everything else it logs goes to stderr: the test reads stdout only up to the line above.
console.log = console.info = (...args) => process.stderr.write(`${args.join(' ')}\n`);
