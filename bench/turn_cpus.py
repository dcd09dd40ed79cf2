"""The turn model on other x86 CPUs: the same clips under emulated instruction sets.

ONNX Runtime picks its kernels from the CPU's instruction set (cpuid). QEMU's user
mode (Debian's ``qemu-user``) runs this machine's Python with another CPU model's
cpuid and instructions, so one machine can show what an AVX2-only home server
(N100-class) answers. (QEMU 7.2 emulates no AVX-512, and this stack stops with an
illegal instruction on CPU models without AVX2.) For every clip of the unit tests'
reference table (``tests/data/turn_reference.json``), each CPU gives:

- Hearth's path (the int8 file run as float32, :class:`SmartTurn`);
- the int8 file on ONNX Runtime's integer kernels, as Pipecat runs it.

Emulation is slow (about 15 s per check), but the numbers are the real kernels'.

    .venv/bin/python -m bench.turn_cpus [--cpus Haswell-v4] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys

from bench.harness import ROOT, arguments, machine, write_section
from bench.turn_reference import TABLE, clip_audio, cpu_flags

CPUS = {
    "Haswell-v4": "AVX2 + FMA, no AVX-512 or VNNI, as N100-class home servers",
}


def probe() -> None:
    """In the (emulated) CPU: every clip through both paths, as JSON on stdout."""
    from daemon.engines.models import resolve_turn_model
    from daemon.engines.turn.smart_turn import SmartTurn

    path = resolve_turn_model("")
    models = {"float32": SmartTurn(path), "int8": SmartTurn(path, exact=False)}
    clips = json.loads(TABLE.read_text())["clips"]
    out = {
        kind: {name: model.probability(clip_audio(name, clip)) for name, clip in clips.items()}
        for kind, model in models.items()
    }
    print(json.dumps(out))


def run_on(cpu: str | None) -> dict[str, dict[str, float]]:
    """Probe on this CPU (None) or under QEMU with the named CPU model."""
    command = [sys.executable, "-m", "bench.turn_cpus", "--probe"]
    if cpu is not None:
        command = ["qemu-x86_64", "-cpu", cpu, *command]
    done = subprocess.run(
        command, capture_output=True, text=True, check=True, timeout=3600, cwd=ROOT
    )
    result: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def isa(flags: str) -> str:
    """The instruction sets that pick ONNX Runtime's kernels, in a few words."""
    words = flags.split()
    have = [name for name, probe in (("AVX2", "avx2"), ("AVX-512", "avx512f")) if probe in words]
    if any("vnni" in w for w in words):
        have.append("VNNI")
    return ", ".join(have) or "no AVX2"


def main(cpus: list[str], write: bool) -> None:
    if cpus and shutil.which("qemu-x86_64") is None:
        raise SystemExit("qemu-x86_64 is missing: apt-get install qemu-user")
    reference = {n: c["probability"] for n, c in json.loads(TABLE.read_text())["clips"].items()}
    runs = {f"this CPU ({isa(cpu_flags())})": run_on(None)}
    for cpu in cpus:
        print(f"emulating {cpu} ...", flush=True)
        runs[f"{cpu}, emulated ({CPUS.get(cpu, '')})"] = run_on(cpu)
    names = sorted(reference)
    lines = [
        "## Turn model on other CPUs",
        "",
        f"{datetime.date.today()}, {machine()}. `bench/turn_cpus.py`: the unit tests' reference"
        " clips through the turn model, on this CPU and under QEMU user-mode emulation of other"
        " x86 CPU models (their cpuid and instructions: ONNX Runtime picks the kernels it has"
        " for them). Reference: the float32 model evaluated by ONNX's numpy reference evaluator"
        " (`bench/turn_reference.py`).",
        "",
        "| CPU | path | " + " | ".join(names) + " | largest distance from the reference |",
        "|---|---|" + "---|" * len(names) + "---|",
        "| - | reference (numpy) | " + " | ".join(f"{reference[n]:.3f}" for n in names) + " | - |",
    ]
    for label, result in runs.items():
        for kind, title in (("float32", "Hearth (float32)"), ("int8", "int8 kernels")):
            probs = result[kind]
            worst = max(abs(probs[n] - reference[n]) for n in names)
            lines.append(
                f"| {label} | {title} | "
                + " | ".join(f"{probs[n]:.3f}" for n in names)
                + f" | {worst:.2g} |"
            )
    floats = [r["float32"] for r in runs.values()]
    spread = max(abs(a[n] - b[n]) for a in floats for b in floats for n in names)
    lines += ["", f"Hearth's answers differ between these CPUs by at most {spread:.1g}."]
    table = "\n".join(lines)
    print(table)
    if write:
        write_section("turn-cpus", table)


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cpus", nargs="*", default=list(CPUS))
    args = parser.parse_args()
    if args.probe:
        probe()
    else:
        main(args.cpus, not args.no_write)
