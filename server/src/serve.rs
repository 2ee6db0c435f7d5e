//! `runway serve`: the core on axum + tokio with the SQLite store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use runway_core::adapter::{
    ALLOW_UNAUTHENTICATED, Access, Config, OsSettings, PlatformOrigin, Reply, Runtime, Runway,
    TokioRuntime,
};
use runway_core::connect::provider::Providers;
use runway_core::http_client::ReqwestClient;
use runway_core::{Agent, Workers};

use crate::data_dir::{DataDir, DataDirError};
use crate::playground::PageSettings;
use crate::serve_models::ServeModels;
use crate::sqlite_store::SqliteStore;

type App<A> = Runway<A, SqliteStore, TokioRuntime>;

/// `serve` options (the `runway serve` flags; [`crate::serve`] gives a user's binary the same
/// ones). Other settings come from the environment: `RUNWAY_AUTH_HEADERS`
/// (newline-separated `Name: value` lines), `RUNWAY_HEARTBEAT_SECS`,
/// `RUNWAY_TURN_DEADLINE_SECS`, `RUNWAY_CONTEXT_TTL_SECS`, `RUNWAY_PUBLIC_URL`,
/// `RUNWAY_BASE_PATH`, `RUNWAY_NAME`, `RUNWAY_ALLOW_UNAUTHENTICATED`.
///
/// Without `RUNWAY_AUTH_HEADERS` the server serves anyone only on a loopback address (local
/// use); on any other address it refuses to start unless `RUNWAY_ALLOW_UNAUTHENTICATED=1`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "RUNWAY_LISTEN", default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,
    /// Where the SQLite database lives.
    #[arg(long, env = "RUNWAY_DATA_DIR", default_value = "./.runway")]
    pub data_dir: PathBuf,
}

/// Serves `agent` as `args` and the `RUNWAY_*` settings say, until SIGINT or SIGTERM: logs
/// to stderr (filter `RUNWAY_LOG`), prints the base URL on stdout once listening, and reports
/// a start-up error (bad setting, unusable data directory or address) as a failure.
pub async fn run<A: Agent>(agent: A, args: ServeArgs) -> ExitCode {
    run_with_providers(agent, args, Providers::new()).await
}

/// [`run`], serving connected accounts at `providers` too (`Runway::with_providers`; the
/// tools file's `[providers.KEY]` for the built-in model agent): `RUNWAY_VAULT_KEY` is then
/// required, and `GET {base}/connect/{id}` and `GET {base}/callback` answer.
pub async fn run_with_providers<A: Agent>(
    agent: A,
    args: ServeArgs,
    providers: Providers,
) -> ExitCode {
    crate::logging::init();
    // The workers of RUNWAY_WORKERS_FILE / RUNWAY_WORKERS if one is set, else `agent`.
    let served = if runway_agents::settings::workers_file_in_env() {
        match workers(agent, &args) {
            Ok(workers) => serve(workers, args, providers).await,
            Err(e) => Err(e),
        }
    } else {
        serve(agent, args, providers).await
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("runway: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workers of the workers file, with `agent` as `agent = "main"`: `${NAME}` read from the
/// environment, model workers run as the built-in model agent is ([`ServeModels`]).
fn workers<A: Agent>(agent: A, args: &ServeArgs) -> Result<Workers, ServeError> {
    let models = ServeModels::open(&args.data_dir)
        .map_err(|e| ServeError::DataDir(args.data_dir.clone(), e))?;
    let env = |k: &str| std::env::var(k).ok();
    runway_agents::workers_from_env(agent, &TokioRuntime, &env, &|m| models.prepare(m))
        .map_err(ServeError::Config)
}

#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("cannot open the data directory {0}: {1}")]
    DataDir(PathBuf, String),
    #[error(transparent)]
    Locked(#[from] DataDirError),
    #[error("cannot listen on {0}: {1}")]
    Listen(SocketAddr, std::io::Error),
    #[error(
        "refusing to serve on {0} without auth: set RUNWAY_AUTH_HEADERS to the header set \
         agreed with Console (newline-separated `Name: value` lines), or listen on a loopback \
         address such as 127.0.0.1 for local use ({ALLOW_UNAUTHENTICATED}=1 serves anyone, \
         only for access restricted another way)"
    )]
    Unauthenticated(SocketAddr),
}

/// Who may call a server listening on `listen`: without a header set, anyone on a loopback
/// address (only this machine can connect), nobody elsewhere (the server does not start).
fn local_access(access: Access, listen: SocketAddr) -> Result<Access, ServeError> {
    match access {
        Access::Unconfigured { .. } if listen.ip().to_canonical().is_loopback() => {
            tracing::info!(
                %listen,
                "no RUNWAY_AUTH_HEADERS: serving without auth on a loopback address (this machine only)"
            );
            Ok(Access::Open)
        }
        Access::Unconfigured { .. } => Err(ServeError::Unauthenticated(listen)),
        other => {
            other.log_at_start();
            Ok(other)
        }
    }
}

async fn serve<A: Agent>(
    agent: A,
    args: ServeArgs,
    providers: Providers,
) -> Result<(), ServeError> {
    // var_os: a value that is not UTF-8 is refused, never read as "not set".
    let env = OsSettings::new(|k: &str| std::env::var_os(k));
    let config = Config::from_lookup(|k| env.get(k));
    env.check().map_err(|e| ServeError::Config(e.to_string()))?;
    let mut config = config.map_err(|e| ServeError::Config(e.to_string()))?;
    config.access = local_access(config.access, args.listen)?;
    let rt = TokioRuntime;
    // Held until this function returns, i.e. while the server runs.
    let data_dir = DataDir::lock(&args.data_dir)?;
    let store = SqliteStore::open(&data_dir.database())
        .map_err(|e| ServeError::DataDir(args.data_dir.clone(), e.to_string()))?;
    let orphaned = store
        .release_orphaned_claims()
        .await
        .map_err(|e| ServeError::DataDir(args.data_dir.clone(), e.to_string()))?;
    if orphaned > 0 {
        tracing::warn!(
            runs = orphaned,
            "runs left running by a process that stopped without finishing them: a retry runs them again"
        );
    }
    spawn_purger(store.clone());

    let auth_names = config.access.header_names();
    // No header set (loopback only, or opted out): the server answers its own origins only.
    let open = config.access.headers().is_none();
    let public_url = config.public_url.clone();
    let page = PageSettings::serve(&config.access.headers().cloned().unwrap_or_default());
    let base_path = config.base_path.clone();
    let name = config.name.clone();
    let runway = Runway::new(agent, store, rt, config)
        .with_http_client(ReqwestClient::new())
        .with_providers(providers)
        .map_err(|e| ServeError::Config(e.to_string()))?;
    let prometheus = crate::metrics::Prometheus::for_policy(runway.policy());
    let runway = runway.with_metrics(prometheus.clone());

    let fd_limit = crate::listener::raise_fd_limit();
    let listener =
        crate::listener::bind(args.listen).map_err(|e| ServeError::Listen(args.listen, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServeError::Listen(args.listen, e))?;
    let mut app = Router::new()
        .merge(crate::playground::page_routes(page, &base_path))
        .route(
            &format!("{base_path}/metrics"),
            axum::routing::any(metrics::<A>),
        )
        .fallback(handle::<A>)
        .layer(axum::Extension(prometheus))
        // Hosted-file links (without RUNWAY_PUBLIC_URL) use the address listened on, never
        // the request's Host header.
        .layer(axum::Extension(PlatformOrigin(format!("http://{addr}"))))
        .with_state(runway);
    if open {
        // No auth set: only this server's own origins (see `own_origin`).
        let origins = std::sync::Arc::new(crate::own_origin::OwnOrigins::new(
            addr,
            public_url.as_deref(),
        ));
        app = app.layer(axum::middleware::from_fn_with_state(
            origins,
            crate::own_origin::own_origins_only,
        ));
    }
    print_banner(&format!("http://{addr}{base_path}"), &name, &auth_names);
    let max_connections = crate::listener::max_connections(fd_limit);
    tracing::info!(fd_limit, max_connections, "accepting connections");
    crate::listener::serve(listener, app, max_connections, crate::shutdown::requested()).await;
    Ok(())
}

/// Reads the body (at most 1 MiB), lets the core answer, and spawns the turn if it streams.
async fn handle<A: Agent>(State(runway): State<App<A>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    // Decided from the head: a stranger's body is never read.
    let intake = match runway.intake(&parts) {
        Ok(intake) => intake,
        Err(refused) => {
            return crate::request_body::refuse(body, refused)
                .await
                .map(Body::from)
                .into_response();
        }
    };
    let bytes = match crate::request_body::read_into(body, intake).await {
        Ok(b) => b,
        Err(refused) => return refused.map(Body::from).into_response(),
    };
    match runway.handle(http::Request::from_parts(parts, bytes)).await {
        Reply::Full(r) => r.map(Body::from).into_response(),
        Reply::Stream { response, turn } => {
            tokio::spawn(turn);
            response.map(Body::from_stream).into_response()
        }
    }
}

/// `GET {base}/metrics`: the Prometheus counters, behind the header set.
async fn metrics<A: Agent>(
    State(runway): State<App<A>>,
    axum::Extension(prometheus): axum::Extension<crate::metrics::Prometheus>,
    req: Request,
) -> Response {
    let (parts, _) = req.into_parts();
    if let Err(refused) = runway.authorize(&parts) {
        return (*refused).map(Body::from).into_response();
    }
    if parts.method != http::Method::GET {
        return runway_core::adapter::json_error(405, "method not allowed: use GET")
            .map(Body::from)
            .into_response();
    }
    (
        [(http::header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        prometheus.render(),
    )
        .into_response()
}

fn spawn_purger(store: SqliteStore) {
    tokio::spawn(async move {
        loop {
            match store.purge_expired(TokioRuntime.now_ms()).await {
                Ok(n) if n > 0 => {
                    tracing::info!(rows = n, "expired threads, runs and files purged")
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "purge of expired rows failed"),
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
}

fn print_banner(base: &str, name: &str, auth_names: &[String]) {
    let headers: String = auth_names
        .iter()
        .map(|n| format!(" -H '{n}: <value>'"))
        .collect();
    println!("runway serving {name}");
    println!("base_url: {base}");
    println!("playground: {base}/ (open it in a browser to chat as in Console)");
    println!("try it:");
    println!(
        "  curl -N {base}/runs{headers} -H 'Content-Type: application/json' \\\n    -d '{{\"protocolVersion\":\"1\",\"runId\":\"run-1\",\"threadId\":\"thread-1\",\"agentId\":\"agent-1\",\"workspaceId\":\"ws-1\",\"input\":\"Hello\"}}'"
    );
    println!(
        "  runway check {base}{}",
        auth_names
            .iter()
            .map(|n| format!(" --header '{n}: <value>'"))
            .collect::<String>()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn without_a_header_set_only_loopback_serves() {
        for local in [
            "127.0.0.1:8787",
            "127.9.9.9:1",
            "[::1]:8787",
            "[::ffff:127.0.0.1]:80",
        ] {
            let access = local_access(Access::default(), addr(local)).unwrap();
            assert!(matches!(access, Access::Open), "{local}");
        }
        for public in [
            "0.0.0.0:8787",
            "[::]:8787",
            "10.0.0.5:80",
            "[::ffff:10.0.0.5]:80",
        ] {
            let e = local_access(Access::default(), addr(public)).unwrap_err();
            let e = e.to_string();
            assert!(
                e.contains("RUNWAY_AUTH_HEADERS") && e.contains("refusing"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_header_set_or_an_explicit_opt_out_serves_anywhere() {
        let set = runway_core::adapter::AuthHeaders::parse("X-Key: k").unwrap();
        let access = local_access(Access::Headers(set), addr("0.0.0.0:1")).unwrap();
        assert_eq!(access.header_names(), ["x-key"]);
        assert!(matches!(
            local_access(Access::Open, addr("0.0.0.0:1")).unwrap(),
            Access::Open
        ));
    }
}
