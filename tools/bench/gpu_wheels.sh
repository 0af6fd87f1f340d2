#!/bin/bash
# The Python wheels the GPU hosts' image lacks for the trainer adapters' GPU tests (run_pending_gpu.sh
# step `adapters`), fetched here into .whl/ (ignored by git), which a device call carries:
#   bash tools/bench/gpu_wheels.sh && run with carry [".gpu", ".whl"]
# The host's image (its python3 3.12 already holds torch, numpy, pandas, pyarrow, matplotlib, httpx,
# ...: the device tool's KINDS.md) gets Gymnasium, skyrl-gym and verifiers and what they import
# beyond it; the versions are the ones tools/setup.sh installs. verl is not in the list: it imports
# ray, a 79 MB wheel, over the 64 MiB a device call carries; tools/bench/gpu_verl_bundle.sh packs verl
# with a pruned ray instead (step `verl`). About 19 MB.
. "$(dirname "${BASH_SOURCE[0]}")/gpu_host_pip.sh"
ignored_folder .whl
wheels=(gymnasium==1.4.0 farama-notifications==0.0.6 skyrl-gym==0.4.0 omegaconf==2.3.1 hydra-core==1.3.8
  platformdirs==4.14.9 sniffio==1.3.1 verifiers==0.3.1 openai==3.57.0 anthropic==2.15.0 jiter==0.19.0
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 datasets==5.2.0
  dill==0.4.1 multiprocess==0.70.19 docstring-parser==0.18.0 tenacity==9.2.1 aiolimiter==1.3.0
  connectrpc==0.11.1 httpx2==2.16.2 pyqwest==0.12.0 renderers==0.1.12 setproctitle==1.3.8
  prime-pydantic-config==0.4.3 prime-sandboxes==0.5.1 protobuf-py==0.1.1 protobuf-py-ext==0.1.1
  google-api-core==2.44.0 google-auth==2.63.0 googleapis-common-protos==1.76.0
  opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 opentelemetry-proto==1.45.2
  opentelemetry-semantic-conventions==0.66b2 opentelemetry-exporter-http-transport==0.66b2
  opentelemetry-exporter-otlp-common==0.66b2 opentelemetry-exporter-otlp-proto-common==1.45.2
  opentelemetry-exporter-otlp-proto-http==1.45.2 opentelemetry-exporter-prometheus==0.66b2)
for w in "${wheels[@]}"; do
  gpu_pip download -d .whl "$w"
done
# antlr4-python3-runtime 4.9.3 (omegaconf's) is a source release only: built into a wheel here (pure Python).
"$KFORGE_PYTHON_BIN" -m pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3
du -sh .whl | cut -f1 | sed 's/^/gpu_wheels: .whl holds /'
