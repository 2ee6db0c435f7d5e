// A stand-in for something that is not a runway agent: /health lists only protocol version
// "2". Prints `base_url: http://127.0.0.1:PORT` once listening.
//   deno run --no-prompt --allow-net=127.0.0.1 fake_health.ts

Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`base_url: http://127.0.0.1:${port}`),
}, (req) => {
  const path = new URL(req.url).pathname;
  if (path.endsWith("/health")) {
    return Response.json({ status: "ok", protocolVersions: ["2"], name: "not runway" });
  }
  return Response.json({ error: "not found" }, { status: 404 });
});
