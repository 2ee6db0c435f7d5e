# Sourced by infra/aws/local and scripts/*-aws.sh: Python venvs with the pinned AWS tools.
#
#   runway_aws_venv        prints the path of the venv with moto[server] and cargo-lambda
#   runway_aws_lint_venv   prints the path of the venv with cfn-lint and aws-sam-cli
#
# Each venv lives under ${RUNWAY_CACHE_DIR:-~/.cache/runway} and is (re)installed from the
# package registry when the requirement files beside this script change. Progress goes to
# stderr.

_runway_aws_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

_runway_venv() {
  local name="$1" req="$2" constraints="$3"
  local cache="${RUNWAY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/runway}"
  local venv="$cache/$name"
  local want lock
  want="$(cat "$req" "$constraints" | sha256sum | cut -c1-16)"
  mkdir -p "$cache"
  # One installer at a time (tests start several stacks at once).
  exec {lock}>"$cache/$name.lock"
  flock "$lock"
  if [[ ! -x "$venv/bin/python" || "$(cat "$venv/.runway-stamp" 2>/dev/null)" != "$want" ]]; then
    echo "[aws-venv] installing $(basename "$req") into $venv (first use)" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      -r "$req" -c "$constraints" >&2
    echo "$want" >"$venv/.runway-stamp"
  fi
  flock -u "$lock"
  exec {lock}>&-
  echo "$venv"
}

runway_aws_venv() {
  _runway_venv aws-venv "$_runway_aws_dir/requirements.txt" "$_runway_aws_dir/constraints.txt"
}
runway_aws_lint_venv() {
  _runway_venv aws-lint-venv "$_runway_aws_dir/requirements-lint.txt" \
    "$_runway_aws_dir/constraints-lint.txt"
}
