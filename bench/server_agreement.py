"""Does the server judge answer as the in-process judge does, on the same GGUF? Measured.

The same questions go to the in-process llama.cpp judge and to the server judge (`--judge-url`) in front
of a server serving the same file on 127.0.0.1, started here: llama-cpp-python's (with the AMX
workaround), or llama.cpp's own `llama-server` binary with --llama-server (`-np --parallel` slots,
`--no-repack` for the same workaround). Both run on --threads, one after the other, never at the same
time, each with an empty judge cache:

- verdicts (verify_statement): HaluEval QA pairs (the right and the hallucinated answer, each checked
  against the row's context) and UHGEval rows (the hallucinated continuation and the real one, against
  the article's first paragraph): largest and mean |ΔP(yes)|, verdict flips at 0.5, answer-word mass;
- ratings (relevance_rating, 1–5): largest |ΔP(k)| and |Δ expected rating|;
- JSON (statements): how many generated values are identical.

The rows come from the dev-data folder (--data). It holds the model lock throughout. Results:
bench/results/server-agreement-<date>-<engine>-<judge>[-<tag>].json.

    .venv/bin/python bench/server_agreement.py --judge smollm2-135m-instruct-q4_1 --halueval 20 --uhgeval 10
    .venv/bin/python bench/server_agreement.py --llama-server path/to/llama-server --parallel 4
"""

from __future__ import annotations

import json
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import IO, Any

import harness

from localeval import models
from localeval.judge import Ask, JudgeOptions, load_judge, open_judge
from localeval.judge.llama_server import free_port, local_server, serving
from localeval.judge.prompts import load_prompt


def asks(data: Path, n_halueval: int, n_uhgeval: int) -> list[Ask]:
    def render(name: str, lang: str, **variables: str) -> Any:
        return load_prompt(name, lang).render(**variables)

    out: list[Ask] = []
    halueval = [json.loads(line) for line in (data / "halueval_qa_dev.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in halueval[: 2 * n_halueval]:  # rows come in pairs: the right answer, then the hallucinated one
        out.append(Ask.yes_no(render("verify_statement", "en", context=row["contexts"][0], statement=row["answer"])))
        out.append(Ask.choice(render("relevance_rating", "en", question=row["question"], answer=row["answer"])))
        out.append(Ask.json(render("statements", "en", question=row["question"], answer=row["answer"])))
    uhgeval = [json.loads(line) for line in (data / "uhgeval_zh_dev.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in uhgeval[:n_uhgeval]:
        for statement in (row["answer"], row["real_continuation"]):
            out.append(Ask.yes_no(render("verify_statement", "zh", context=row["contexts"][0], statement=statement)))
        out.append(Ask.choice(render("relevance_rating", "zh", question=row["question"], answer=row["real_continuation"])))
    return out


def compare(questions: list[Ask], server: list[Any], local: list[Any]) -> dict[str, Any]:
    deltas, flips, masses, rating_deltas, expected_deltas, same_json, json_total, errors = [], 0, [], [], [], 0, 0, 0
    token_mismatches = 0  # prompts the server counted differently: a different rendering of the chat template
    for ask, a, b in zip(questions, server, local):
        if a.error is not None or b.error is not None:
            errors += 1
            continue
        token_mismatches += a.stats.prompt_tokens != b.stats.prompt_tokens
        if ask.kind == "yes_no":
            deltas.append(abs(a.value - b.value))
            flips += (a.value >= 0.5) != (b.value >= 0.5)
            masses.append((a.mass, b.mass))
        elif ask.kind == "choice":
            rating_deltas.append(max(abs(a.value[k] - b.value[k]) for k in b.value))
            expected = [sum(int(k) * p for k, p in d.items()) for d in (a.value, b.value)]
            expected_deltas.append(abs(expected[0] - expected[1]))
        else:
            json_total += 1
            same_json += a.value == b.value
    return {
        "verdicts": len(deltas), "max_abs_delta_p": max(deltas, default=0.0),
        "mean_abs_delta_p": sum(deltas) / max(len(deltas), 1), "verdict_flips": flips,
        "min_answer_mass_server": min((m[0] for m in masses), default=None),
        "max_mass_shortfall": max((m[1] - m[0] for m in masses), default=0.0),
        "ratings": len(rating_deltas), "max_abs_delta_rating_p": max(rating_deltas, default=0.0),
        "max_abs_delta_expected_rating": max(expected_deltas, default=0.0),
        "json_identical": same_json, "json_total": json_total, "errors": errors, "prompt_token_mismatches": token_mismatches,
    }


def llama_server(binary: Path, model: Path, args: Any, log: IO[Any]) -> Any:
    """llama.cpp's server: --parallel slots of --n-ctx tokens each, continuous batching, the GGUF's template."""
    port = free_port()
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-np", str(args.parallel),
               "-c", str(args.n_ctx * args.parallel), "-cb", "--jinja", "-t", str(args.threads), "-tb", str(args.threads),
               "--no-repack", "--seed", "0", *args.server_args.split()]
    return serving(command, port, log=log)


def main() -> None:
    parser = harness.parser(__doc__, "judge", "threads", "n_ctx", "tag", judge="smollm2-135m-instruct-q4_1", threads=1)
    parser.add_argument("--data", type=Path, default=harness.dev_data(), help="the dev-data folder")
    parser.add_argument("--halueval", type=int, default=20, help="HaluEval QA pairs")
    parser.add_argument("--uhgeval", type=int, default=10, help="UHGEval rows")
    parser.add_argument("--llama-server", type=Path, help="a llama-server binary (default: llama-cpp-python's server)")
    parser.add_argument("--parallel", type=int, default=1, help="requests in flight (and llama-server slots)")
    parser.add_argument("--server-args", default="", help="more llama-server arguments, e.g. '-fa off'")
    args = parser.parse_args()

    questions = asks(args.data, args.halueval, args.uhgeval)
    path = models.resolve(args.judge, "judge")
    with harness.model_lock(), tempfile.TemporaryDirectory() as tmp:
        local = load_judge(path, cache=Path(tmp) / "local.sqlite", n_ctx=args.n_ctx, n_threads=args.threads)
        started = time.perf_counter()
        in_process = local.ask(questions)
        local_seconds = time.perf_counter() - started
        local.close()
        with (Path(tmp) / "server.log").open("w") as log, \
                (llama_server(args.llama_server, path, args, log) if args.llama_server else
                 local_server(path, n_ctx=args.n_ctx, threads=args.threads, log=log)) as (url, _):
            remote = open_judge(JudgeOptions(judge_url=url, cache=str(Path(tmp) / "server.sqlite"), n_ctx=args.n_ctx,
                                             parallel=args.parallel))
            started = time.perf_counter()
            by_server = remote.ask(questions)
            server_seconds = time.perf_counter() - started
            described = remote.describe()
            remote.close()
    figures = {**compare(questions, by_server, in_process), "in_process_seconds": round(local_seconds, 1),
               "server_seconds": round(server_seconds, 1)}
    for key, value in figures.items():
        print(f"{key:32s} {value:.3g}" if isinstance(value, float) else f"{key:32s} {value}")
    engine = "llama-server" if args.llama_server else "llama-cpp-python"
    harness.write_json(harness.results_path("server-agreement", engine, harness.judge_label(args.judge), args.tag),
                       {"date": str(date.today()), "judge": args.judge, "engine": engine,
                        "server_args": args.server_args, "parallel": args.parallel, "threads": args.threads,
                        "n_ctx": args.n_ctx, "server": {k: v for k, v in described.items() if k != "server"},
                        "questions": len(questions), **figures})


if __name__ == "__main__":
    main()
