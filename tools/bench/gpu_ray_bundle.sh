#!/bin/bash
# ray 2.60.0 with its cluster binaries (raylet, GCS server) and what its core imports beyond the GPU
# hosts' image, for a Ray-started `kforge serve` on a GPU (run_pending_gpu.sh step `ray_serve`),
# installed here for the hosts' Python (cp312, manylinux x86_64) and packed as one archive,
# .ray/site.tar.xz (ignored by git), which a device call carries:
#   bash tools/bench/gpu_ray_bundle.sh && run with carry [".gpu", ".ray"]
# ray's wheel (79 MB) is over the 64 MiB a call carries, so ray is installed from its real wheel and
# the parts a local cluster with actors and placement groups never loads are left out of the
# archive: its Java jars, the dashboard's web client, and the libraries rllib, tune, train, serve,
# data and llm (unlike gpu_verl_bundle.sh, which also drops the raylet and GCS server). A module left
# out that something imports fails with ModuleNotFoundError there: nothing is stubbed.
. "$(dirname "${BASH_SOURCE[0]}")/gpu_host_pip.sh"
ignored_folder .ray
pkgs=(ray==2.60.0 click==8.5.1 filelock==4.3.2 jsonschema==4.26.0 jsonschema-specifications==2025.9.1
  referencing==0.37.0 rpds-py==2026.9.1 protobuf==7.36.2 attrs==26.1.0)
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
gpu_pip install --target "$site/site" "${pkgs[@]}"
r=$site/site/ray
rm -rf "$r/jars" "$r/dashboard/client/build" "$r/rllib" "$r/tune" "$r/train" "$r/serve" "$r/data" "$r/llm" "$site/site/bin"
find "$site/site" -name __pycache__ -prune -exec rm -rf {} +
tar cJf .ray/site.tar.xz -C "$site/site" .
echo "gpu_ray_bundle: .ray/site.tar.xz holds $(du -sh .ray/site.tar.xz | cut -f1) ($(du -sh "$site/site" | cut -f1) unpacked)"
