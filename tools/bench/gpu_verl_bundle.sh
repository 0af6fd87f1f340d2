#!/bin/bash
# verl 0.9.1 and what its tool path imports beyond the GPU hosts' image, for python.verl_adapter_gpu
# (run_pending_gpu.sh step `verl`), installed here for the hosts' Python (cp312, manylinux x86_64)
# and packed as one archive, .verl/site.tar.xz (ignored by git), which a device call carries:
#   bash tools/bench/gpu_verl_bundle.sh && run with carry [".gpu", ".verl"]
# ray's wheel (79 MB) is over the 64 MiB a call carries, so ray is installed from its real wheel
# and then the parts that importing verl's tool and agent loop never loads are left out of the
# archive: its Java jars, the raylet and GCS server binaries (a ray cluster is not started: verl's
# ToolAgentLoop is driven in-process, as in the CPU suite), the dashboard's web client and the
# libraries rllib, tune, train, serve, data and llm. A module left out that something imports fails
# with ModuleNotFoundError there (the test then fails or skips saying so): nothing is stubbed.
# The list is what importing kforge_client.adapters.verl_tool and verl's ToolAgentLoop loads in a venv
# made by tools/setup.sh alone, less what the image has; the versions are that venv's.
. "$(dirname "${BASH_SOURCE[0]}")/gpu_host_pip.sh"
ignored_folder .verl
pkgs=(verl==0.9.1 ray==2.60.0 tensordict==0.10.0 codetiming==1.4.0 pyvers==0.1.0 cachetools==8.0.2 fastapi==0.165.0
  starlette==1.10.0 uvicorn==0.54.0 python-multipart==0.0.34 orjson==3.13.0 sniffio==1.3.1 protobuf==7.36.2
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 hydra-core==1.3.8
  omegaconf==2.3.1 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 jsonschema==4.26.0
  jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 colorful==0.5.8 google-api-core==2.44.0
  google-auth==2.63.0 googleapis-common-protos==1.76.0 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2
  opentelemetry-proto==1.45.2 opentelemetry-semantic-conventions==0.66b2 opentelemetry-exporter-prometheus==0.66b2
  opentelemetry-exporter-http-transport==0.66b2 opentelemetry-exporter-otlp-common==0.66b2
  opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2)
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
gpu_pip install --target "$site/site" "${pkgs[@]}"
# antlr4-python3-runtime 4.9.3 (omegaconf's) is a source release only: a pure-Python wheel built here.
"$KFORGE_PYTHON_BIN" -m pip wheel -q --no-deps -w "$site/wheels" antlr4-python3-runtime==4.9.3
"$KFORGE_PYTHON_BIN" -m pip install -q --no-deps --target "$site/site" "$site"/wheels/*.whl
r=$site/site/ray
rm -rf "$r/jars" "$r/core/src/ray/raylet" "$r/core/src/ray/gcs" "$r/dashboard/client/build" \
  "$r/rllib" "$r/tune" "$r/train" "$r/serve" "$r/data" "$r/llm" "$site/site/bin"
find "$site/site" -name __pycache__ -prune -exec rm -rf {} +
tar cJf .verl/site.tar.xz -C "$site/site" .
echo "gpu_verl_bundle: .verl/site.tar.xz holds $(du -sh .verl/site.tar.xz | cut -f1) ($(du -sh "$site/site" | cut -f1) unpacked)"
