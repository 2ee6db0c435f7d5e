/**
 * runway's Lowkey package, web-installable variant: the entry module the web installer
 * requires. The agent itself is the manifest's `external:` agent block (Lowkey POSTs each turn
 * to runway's `/lowkey/turn`); this module only checks, at install, that the agent is there.
 *
 * It runs in Lowkey's jail with exactly the manifest's one capability, `net.egress` to the
 * agent's domain (`deno --no-prompt --allow-net=<domain>`): no files, no environment, no other
 * host. `configure.mjs` writes the deployed agent's base URL below.
 *
 * @module
 */

/** The deployed runway's base URL (no trailing slash), written by `configure.mjs`. */
export const AGENT_BASE_URL = "https://runway.example.invalid";

/** The `/health` protocol version this package needs the agent to speak. */
export const REQUIRED_PROTOCOL_VERSION = "1";

/** What {@link checkAgent} found. */
export interface AgentCheck {
  /** True when the agent answered `/health` and speaks protocol version "1". */
  ok: boolean;
  /** The URL that was checked. */
  url: string;
  /** HTTP status, when the agent answered. */
  status?: number;
  /** `protocolVersions` from the agent's `/health`, when it sent them. */
  protocolVersions?: string[];
  /** One sentence for the operator: what is wrong and what to do, or that all is well. */
  message: string;
}

/** Options of {@link checkAgent}. */
export interface CheckOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** The fetch to use (default: the global one, which the jail restricts). */
  fetch?: typeof fetch;
}

function isPermissionError(e: unknown): boolean {
  const errors = (globalThis as { Deno?: { errors?: Record<string, unknown> } }).Deno?.errors;
  for (const name of ["NotCapable", "PermissionDenied"]) {
    const cls = errors?.[name];
    if (typeof cls === "function" && e instanceof (cls as new () => Error)) return true;
  }
  return false;
}

/**
 * Checks the agent's `GET {baseUrl}/health`. Never throws: every outcome is a report.
 */
export async function checkAgent(
  baseUrl: string = AGENT_BASE_URL,
  options: CheckOptions = {},
): Promise<AgentCheck> {
  const base = baseUrl.replace(/\/+$/, "");
  const url = `${base}/health`;
  const doFetch = options.fetch ?? fetch;
  let res: Response;
  try {
    res = await doFetch(url, {
      method: "GET",
      headers: { accept: "application/json" },
      redirect: "manual",
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
  } catch (e) {
    if (isPermissionError(e)) {
      return {
        ok: false,
        url,
        message: `The package may not reach ${url}: its net.egress grant does not include that ` +
          `domain. Reconfigure the package for the agent's URL (configure.mjs) and install again.`,
      };
    }
    let why = e instanceof Error ? e.message : String(e);
    const cause = e instanceof Error ? (e as { cause?: unknown }).cause : undefined;
    if (cause instanceof Error && cause.message) why = `${why}: ${cause.message}`;
    return {
      ok: false,
      url,
      message:
        `The runway agent is unreachable at ${url} (${why}). Check that it is deployed and ` +
        `that this Lowkey host can reach it.`,
    };
  }
  const status = res.status;
  if (status === 401 || status === 403) {
    await res.body?.cancel();
    return {
      ok: false,
      url,
      status,
      message: `The runway agent at ${base} requires auth headers (HTTP ${status}), but Lowkey's ` +
        `external turn protocol v1 sends none: deploy it with RUNWAY_ALLOW_UNAUTHENTICATED=1 and ` +
        `without RUNWAY_AUTH_HEADERS, behind a network restriction that only lets this Lowkey ` +
        `host in.`,
    };
  }
  if (status < 200 || status > 299) {
    await res.body?.cancel();
    return {
      ok: false,
      url,
      status,
      message: `The runway agent at ${url} answered HTTP ${status} instead of 200.`,
    };
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    return {
      ok: false,
      url,
      status,
      message: `${url} did not answer JSON: is this the base URL of a runway agent?`,
    };
  }
  const health = (body ?? {}) as { status?: unknown; protocolVersions?: unknown };
  const versions = Array.isArray(health.protocolVersions)
    ? health.protocolVersions.filter((v): v is string => typeof v === "string")
    : undefined;
  if (!versions || !versions.includes(REQUIRED_PROTOCOL_VERSION)) {
    const got = versions ? JSON.stringify(versions) : "no protocolVersions";
    return {
      ok: false,
      url,
      status,
      protocolVersions: versions,
      message:
        `The agent at ${base} does not speak protocol version "${REQUIRED_PROTOCOL_VERSION}" ` +
        `(its /health lists ${got}): it is not a runway agent this package can use.`,
    };
  }
  if (health.status === "down") {
    return {
      ok: false,
      url,
      status,
      protocolVersions: versions,
      message: `The runway agent at ${base} reports status "down": it is not serving turns.`,
    };
  }
  const degraded = health.status === "degraded"
    ? ` (status "degraded": it had storage errors recently)`
    : "";
  return {
    ok: true,
    url,
    status,
    protocolVersions: versions,
    message: `The runway agent at ${base} is reachable and speaks protocol version ` +
      `"${REQUIRED_PROTOCOL_VERSION}"${degraded}.`,
  };
}

/**
 * Lowkey calls this once, at install. It checks the agent and fails the install with a clear
 * message when the agent is unreachable or does not speak protocol version "1".
 */
export async function onInstall(_ctx?: unknown): Promise<AgentCheck> {
  const report = await checkAgent();
  if (!report.ok) {
    console.error(`[runway] ${report.message}`);
    throw new Error(report.message);
  }
  console.log(`[runway] ${report.message}`);
  return report;
}
