# Sourced by scripts/setup-agui.sh: the venv with the AG-UI conformance validator
# (tests/agui/requirements.txt + constraints.txt), installed like the AWS tools' venvs.
#
#   runway_agui_venv   prints the path of the venv

_runway_agui_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../infra/aws/venv.sh
source "$_runway_agui_dir/../../infra/aws/venv.sh"

runway_agui_venv() {
  _runway_venv agui-venv "$_runway_agui_dir/requirements.txt" "$_runway_agui_dir/constraints.txt"
}
