# Sourced by scripts/setup-mcp.sh: the venv with the official Python MCP SDK
# (tests/mcp/requirements.txt + constraints.txt), installed like the AWS tools' venvs.
#
#   runway_mcp_venv   prints the path of the venv

_runway_mcp_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../infra/aws/venv.sh
source "$_runway_mcp_dir/../../infra/aws/venv.sh"

runway_mcp_venv() {
  _runway_venv mcp-venv "$_runway_mcp_dir/requirements.txt" "$_runway_mcp_dir/constraints.txt"
}
