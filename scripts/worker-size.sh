#!/usr/bin/env bash
# The repo's Worker's upload size, as `wrangler deploy --dry-run` (offline) reports it, for both
# builds: the default one (`builtin-worker` with Lowkey and AG-UI, without connected accounts:
# demo, echo, http-probe; what `npx wrangler deploy` from cloudflare/ uploads, as cf_build in
# infra/cloudflare/tools.sh builds it), which must stay within this project's 512 KiB gzip budget, and the
# one with the model agent (`builtin-worker,model`, the build scripts/test-cloudflare.sh tests),
# and that one without runway-cloudflare's default features (Lowkey, AG-UI, connected accounts,
# MCP): a model Worker serving Console only, the common pilot (README, "Cargo features").
# Three release builds of the Worker (several minutes each on 2 cores): not part of CI, which
# builds the model Worker only; BENCHMARKS.md quotes what this prints.
#
#   scripts/worker-size.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../infra/cloudflare/tools.sh
. infra/cloudflare/tools.sh
default_budget_kib=512

cf_ensure_all
# cf_build builds; the [build] command of the dry runs then keeps what it built.
export RUNWAY_CF_PREBUILT=1
for build in default builtin-worker,model builtin-worker,model/console-only; do
  features="${build%/*}"
  # The default Worker: RUNWAY_CF_FEATURES unset (cf_build says what it leaves out).
  [ "$features" = default ] && features=
  # The dry run runs wrangler.toml's [build] command, which builds with RUNWAY_CF_FEATURES:
  # set for cf_build alone, the dry run rebuilt and measured the default build each time.
  # RUNWAY_CF_PREBUILT=1 (exported above) makes it measure this build as it is.
  export RUNWAY_CF_FEATURES="$features" RUNWAY_CF_NO_DEFAULT_FEATURES=
  # Only the console-only build: the default one (build "default", features empty) is already
  # without them, and cf_build gave cargo --no-default-features twice, which it refuses.
  case "$build" in */console-only) RUNWAY_CF_NO_DEFAULT_FEATURES=1 ;; esac
  cf_build
  cf_upload_size >/dev/null
  printf '%-36s %s\n' "$build:" "$CF_UPLOAD"
  if [ "$build" = default ]; then
    default_gzip="$CF_UPLOAD_GZIP_KIB"
  fi
done
CF_UPLOAD_GZIP_KIB="$default_gzip" cf_check_upload "$default_budget_kib"
echo "the default Worker is within its $default_budget_kib KiB gzip budget"
