# Sourced by scripts/bench-peer.sh: the venv with the FastAPI peer's packages
# (tests/peer/requirements.txt + constraints.txt), installed like the AWS tools' venvs.
#
#   runway_peer_venv   prints the path of the venv

_runway_peer_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../infra/aws/venv.sh
source "$_runway_peer_dir/../../infra/aws/venv.sh"

runway_peer_venv() {
  _runway_venv peer-venv "$_runway_peer_dir/requirements.txt" "$_runway_peer_dir/constraints.txt"
}
