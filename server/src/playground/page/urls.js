// Which URLs from an agent the page may link to.

/** `url` if it parses and its scheme is one of `schemes` ("https:", …), else null. */
export function safeUrl(url, schemes) {
  try {
    const u = new URL(String(url));
    return schemes.includes(u.protocol) ? u.href : null;
  } catch {
    return null;
  }
}

/** `url` if it is http(s) on this machine (127.0.0.1, [::1], localhost), else null. */
export function loopbackUrl(url) {
  const u = safeUrl(url, ["http:", "https:"]);
  if (!u) return null;
  const host = new URL(u).hostname;
  return ["127.0.0.1", "[::1]", "localhost"].includes(host) ? u : null;
}
