"""A scenario's matrix: one variant per combination of its values, each a scenario of its own
whose id says them; personas mixed in through the key ``persona``; a bad matrix one line naming
file and field; the variants kept in run.json, the tables, the report's dimensions, a comparison,
a resume and a re-judge."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import msgspec
import pytest

from convy import Bench, Models, Plan, Scenarios
from convy.cli import main
from convy.fakes import Echo, FakeModel, MemoryJournal
from convy.project import Project
from convy.prompt import STOP, Prompt
from convy.records import RunFile
from convy.report import Dimensions, Summary
from convy.scenario import Scenario
from convy.stats import Tally
from convy.variants import Variant

UPSET = (
    "id: refunds/upset\n"
    "tags: [refunds]\n"
    'user: "You are a {{ mood }} customer writing in {{ language }}, order {{ order }}."\n'
    'script: ["Hello ({{ language }})"]\n'
    "vars: {order: 1234}\n"
    "matrix:\n"
    "  mood: [calm, angry]\n"
    "  language: [English, German]\n"
    "judge:\n"
    "  - check: {said: Hello}\n"
)

PERSONAS = "- name: retiree\n  age: 78\n  tech: low\n- name: student\n  age: 20\n  tech: high\n"


def folder(tmp_path: Path, files: dict[str, str], personas: str | None = None) -> Path:
    scenarios = tmp_path / "scenarios"
    for name, text in files.items():
        (scenarios / name).parent.mkdir(parents=True, exist_ok=True)
        (scenarios / name).write_text(text, encoding="utf-8")
    if personas is not None:
        (tmp_path / "personas.yaml").write_text(personas, encoding="utf-8")
    return scenarios


def test_a_matrix_plays_one_variant_per_combination(tmp_path: Path) -> None:
    """Two moods × two languages are four scenarios, the first key varying slowest, each id saying
    its values, each with them among its vars, its script filled, its tags kept."""
    scenarios, problems = Scenarios(folder(tmp_path, {"upset.yaml": UPSET})).sound()
    assert problems == ()
    assert [one.id for one in scenarios] == [
        "refunds/upset[mood=calm,language=English]",
        "refunds/upset[mood=calm,language=German]",
        "refunds/upset[mood=angry,language=English]",
        "refunds/upset[mood=angry,language=German]",
    ]
    last = scenarios[-1]
    assert last.variant == Variant("refunds/upset", {"mood": "angry", "language": "German"})
    assert last.vars == {"order": 1234, "mood": "angry", "language": "German"}
    assert last.script == ("Hello (German)",)
    assert last.tags == ("refunds",)
    assert last.matrix == {}
    told = last.told(Prompt("{{ instructions }}"))
    assert told == "You are a angry customer writing in German, order 1234."


def test_numbers_and_booleans_are_values_and_written_as_yaml_writes_them(tmp_path: Path) -> None:
    """A matrix of numbers and true/false keeps their kinds in the vars; the id writes true as true."""
    text = "user: '{{ age }} {{ vip }}'\nmatrix: {age: [20, 78.5], vip: [true, false]}\njudge: [ok]\n"
    scenarios = Scenarios(folder(tmp_path, {"s.yaml": text})).every()
    assert [one.id for one in scenarios] == [
        "s[age=20,vip=true]",
        "s[age=20,vip=false]",
        "s[age=78.5,vip=true]",
        "s[age=78.5,vip=false]",
    ]
    assert scenarios[0].vars == {"age": 20, "vip": True}


def test_personas_fill_slots_by_name(tmp_path: Path) -> None:
    """matrix: {persona: all} plays every persona of personas.yaml, each filling its values and its
    name; a list names some of them."""
    text = "user: 'I am {{ persona }}, {{ age }}, tech {{ tech }}, {{ mood }}'\nmatrix: {mood: [calm], persona: all}\njudge: [ok]\n"
    scenarios = Scenarios(folder(tmp_path, {"s.yaml": text}, PERSONAS)).every()
    assert [one.id for one in scenarios] == ["s[mood=calm,persona=retiree]", "s[mood=calm,persona=student]"]
    assert scenarios[1].told(Prompt("{{ instructions }}")) == "I am student, 20, tech high, calm"
    assert scenarios[1].variant == Variant("s", {"mood": "calm", "persona": "student"})
    some = "user: '{{ age }}'\nmatrix: {persona: [student]}\njudge: [ok]\n"
    (only,) = Scenarios(folder(tmp_path / "some", {"s.yaml": some}, PERSONAS)).every()
    assert only.id == "s[persona=student]"


# (case, scenario text, personas.yaml or None, the exact line)
BROKEN: list[tuple[str, str, str | None, str]] = [
    (
        "an empty list",
        "user: '{{ mood }}'\nmatrix: {mood: []}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: matrix.mood: an empty list plays no variant: give at least one value",
    ),
    (
        "a value of the wrong kind",
        "user: '{{ mood }}'\nmatrix: {mood: [calm, {a: 1}]}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: matrix.mood[1]: expected text, a number or true/false, got a mapping",
    ),
    (
        "values not a list",
        "user: '{{ mood }}'\nmatrix: {mood: calm}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: matrix.mood: expected a list of values, got text",
    ),
    (
        "a value given twice",
        "user: '{{ n }}'\nmatrix: {n: [1, '1']}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: matrix.n[1]: '1' is given already, at [0]",
    ),
    (
        "a slot neither a var nor a matrix key",
        "user: '{{ mood }} {{ name }}'\nmatrix: {mood: [calm]}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: user: no value for {{ name }} in vars or matrix",
    ),
    (
        "a script slot not filled",
        "user: '{{ mood }}'\nscript: ['hi {{ who }}']\nmatrix: {mood: [calm]}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: script[0]: no value for {{ who }} in vars or matrix",
    ),
    (
        "a key that fills no slot",
        "user: '{{ mood }}'\nmatrix: {mood: [calm], tone: [dry]}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: matrix.tone: fills no {{ tone }} in user, script or judge",
    ),
    (
        "a key that is also a var",
        "user: '{{ mood }}'\nvars: {mood: calm}\nmatrix: {mood: [angry]}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: matrix.mood: also a var: give it in vars or in matrix, not both",
    ),
    (
        "too many variants",
        "user: '{{ a }} {{ b }}'\nmatrix: {a: [" + ", ".join(map(str, range(13))) + "], b: [1, 2, 3, 4, 5]}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: matrix: 65 variants, more than 64: give --max-variants 65 to play them all",
    ),
    (
        "a persona not in personas.yaml",
        "user: '{{ age }}'\nmatrix: {persona: [retiree, pirate]}\njudge: [ok]\n",
        PERSONAS,
        "scenarios/s.yaml: matrix.persona[1]: no persona 'pirate' in personas.yaml; its personas are retiree, student",
    ),
    (
        "all personas of none",
        "user: '{{ age }}'\nmatrix: {persona: all}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: matrix.persona: all, but there is no personas.yaml beside scenarios/",
    ),
    (
        "a persona's value that is also a var",
        "user: '{{ age }}'\nvars: {age: 3}\nmatrix: {persona: [retiree]}\njudge: [ok]\n",
        PERSONAS,
        "scenarios/s.yaml: matrix.persona: persona 'retiree' sets age, also a var or matrix key",
    ),
    (
        "a slot a persona leaves empty",
        "user: '{{ age }} {{ shoe }}'\nmatrix: {persona: [retiree]}\njudge: [ok]\n",
        PERSONAS,
        "scenarios/s.yaml: user: no value for {{ shoe }} in vars, matrix or persona (persona 'retiree' of personas.yaml has no shoe) (variant persona=retiree)",
    ),
    (
        "a persona without a name",
        "user: '{{ age }}'\nmatrix: {persona: all}\njudge: [ok]\n",
        "- age: 3\n",
        "personas.yaml: [0].name: give each persona a name (text)",
    ),
    (
        "a persona's value of the wrong kind",
        "user: '{{ age }}'\nmatrix: {persona: all}\njudge: [ok]\n",
        "- name: a\n  age: [3]\n",
        "personas.yaml: [0].age: expected text, a number or true/false, got a list",
    ),
    (
        "variant written in a file",
        "user: hi\njudge: [ok]\nvariant: {of: x, values: {}}\n",
        None,
        "scenarios/s.yaml: variant: convy sets it on each variant of a matrix; write matrix:",
    ),
    (
        "a persona's name misspelt",
        "user: '{{ age }}'\nmatrix: {persona: [retiree, studnet]}\njudge: [ok]\n",
        PERSONAS,
        "scenarios/s.yaml: matrix.persona[1]: no persona 'studnet' in personas.yaml; did you mean student?",
    ),
    (
        "a persona named where there is no personas.yaml",
        "user: '{{ age }}'\nmatrix: {persona: [retiree]}\njudge: [ok]\n",
        None,
        "scenarios/s.yaml: matrix.persona[0]: no persona 'retiree': there is no personas.yaml beside scenarios/ "
        "(a list of personas, each - name: retiree with its values)",
    ),
    (
        "all in a list",
        "user: '{{ age }}'\nmatrix: {persona: [all]}\njudge: [ok]\n",
        PERSONAS,
        "scenarios/s.yaml: matrix.persona[0]: all in a list is a persona's name: for every persona, write persona: all, not in a list",
    ),
    (
        "a persona's key misspelt",
        "user: '{{ age }}'\nmatrix: {persona: all}\njudge: [ok]\n",
        "- name: retiree\n  age: 78\n- name: student\n  ag: 20\n",
        "scenarios/s.yaml: user: no value for {{ age }} in vars, matrix or persona (persona 'student' of personas.yaml "
        "has no age; is its ag a slip for age?) (variant persona=student)",
    ),
    (
        "a persona's name key misspelt",
        "user: '{{ age }}'\nmatrix: {persona: all}\njudge: [ok]\n",
        "- nam: retiree\n  age: 78\n",
        "personas.yaml: [0].name: give each persona a name (text) (is nam: a slip for name:?)",
    ),
    (
        "personas as a mapping of names",
        "user: '{{ age }}'\nmatrix: {persona: [retiree]}\njudge: [ok]\n",
        "retiree:\n  age: 78\nstudent:\n  age: 20\n",
        "personas.yaml: must be a list of personas, each a mapping with a name, not a mapping of names: write each "
        "as - name: retiree with its values below it",
    ),
    (
        "a persona named under vars",
        "user: '{{ persona }} {{ age }}'\nvars: {persona: retiree}\njudge: [ok]\n",
        PERSONAS,
        "scenarios/s.yaml: vars.persona: 'retiree' is a persona of personas.yaml, but under vars it is one value and "
        "the persona's values fill nothing: write matrix: {persona: [retiree]}",
    ),
]


@pytest.mark.parametrize(("case", "text", "personas", "expected"), BROKEN, ids=[case for case, *_ in BROKEN])
def test_a_bad_matrix_is_one_line_naming_file_and_field(tmp_path: Path, case: str, text: str, personas: str | None, expected: str) -> None:
    """Each bad matrix (and each bad persona) is a line naming the file and the field."""
    _, problems = Scenarios(folder(tmp_path, {"s.yaml": text}, personas)).sound()
    assert expected in problems, problems


def test_a_persona_named_for_its_file_lists_the_problems_above(tmp_path: Path) -> None:
    """A persona the file would name but for its own problem says so, after the file's line."""
    _, problems = Scenarios(folder(tmp_path, {"s.yaml": "user: '{{ age }}'\nmatrix: {persona: [retiree]}\njudge: [ok]\n"}, "- nam: retiree\n  age: 78\n- name: b\n")).sound()
    assert problems == (
        "personas.yaml: [0].name: give each persona a name (text) (is nam: a slip for name:?)",
        "scenarios/s.yaml: matrix.persona[0]: no persona 'retiree' in personas.yaml; its personas are b "
        "(personas.yaml has problems of its own, said above)",
    )


def test_personas_yml_is_read_as_personas_yaml(tmp_path: Path) -> None:
    """``personas.yml`` is read as ``personas.yaml`` is, and named as it is written."""
    scenarios = folder(tmp_path, {"s.yaml": "user: 'aged {{ age }}'\nmatrix: {persona: all}\njudge: [ok]\n"})
    (tmp_path / "personas.yml").write_text(PERSONAS, encoding="utf-8")
    played = Scenarios(scenarios).every()
    assert [(one.id, one.user) for one in played] == [("s[persona=retiree]", "aged 78"), ("s[persona=student]", "aged 20")]
    (tmp_path / "personas.yml").write_text("- name: retiree\n  ag: 78\n", encoding="utf-8")
    _, problems = Scenarios(scenarios).sound()
    assert problems == (
        "scenarios/s.yaml: user: no value for {{ age }} in vars, matrix or persona (persona 'retiree' of personas.yml "
        "has no age; is its ag a slip for age?) (variant persona=retiree)",
    )


def test_personas_yaml_and_yml_both_are_refused(tmp_path: Path) -> None:
    scenarios = folder(tmp_path, {"s.yaml": "user: '{{ age }}'\nmatrix: {persona: all}\njudge: [ok]\n"}, PERSONAS)
    (tmp_path / "personas.yml").write_text(PERSONAS, encoding="utf-8")
    _, problems = Scenarios(scenarios).sound()
    assert problems[0] == "personas.yaml and personas.yml: two files of personas; keep one of them"


def test_personas_put_in_the_scenarios_folder_are_said_to_move(tmp_path: Path) -> None:
    scenarios = folder(tmp_path, {"s.yaml": "user: '{{ age }}'\nmatrix: {persona: [retiree]}\njudge: [ok]\n", "personas.yaml": PERSONAS})
    _, problems = Scenarios(scenarios).sound()
    assert problems[0] == (
        "scenarios/personas.yaml: read as a scenario, since it is in scenarios/: personas are read from "
        "personas.yaml beside scenarios/; move it there"
    )


def test_max_variants_lets_a_large_matrix_play(tmp_path: Path) -> None:
    """65 variants are refused by default and played with a bound of 65."""
    text = "user: '{{ a }} {{ b }}'\nmatrix: {a: [" + ", ".join(map(str, range(13))) + "], b: [1, 2, 3, 4, 5]}\njudge: [ok]\n"
    scenarios = Scenarios(folder(tmp_path, {"s.yaml": text}), most_variants=65).every()
    assert len(scenarios) == 65
    assert len({one.id for one in scenarios}) == 65


def project(tmp_path: Path, files: dict[str, str], attempts: int = 2, agent: str = "from convy.fakes import Echo\nagent = Echo()\n", models: str = "") -> Path:
    folder(tmp_path, files)
    (tmp_path / "agents").mkdir(exist_ok=True)
    (tmp_path / "agents" / "bot.py").write_text(agent, encoding="utf-8")
    (tmp_path / "models.py").write_text(
        models or f"from convy import Models\nfrom convy.fakes import FakeModel, FakeJudge\nmodels = Models(user=FakeModel([{STOP!r}]), judge=FakeJudge())\n",
        encoding="utf-8",
    )
    (tmp_path / "pyproject.toml").write_text(f"[tool.convy]\nattempts = {attempts}\nagent_places = 1\n", encoding="utf-8")
    return tmp_path


def test_check_lists_matrix_problems_with_the_others_and_max_variants_clears_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convy check` says a matrix's problems beside another file's, exit 2 and no traceback;
    `--max-variants` lets the large matrix through."""
    large = "user: '{{ a }}'\nmatrix: {a: [" + ", ".join(map(str, range(70))) + "]}\njudge: [ok]\n"
    where = project(tmp_path, {"large.yaml": large, "broken.yaml": "user: hi\n", "upset.yaml": UPSET})
    assert main(["-C", str(where), "check"]) == 2
    said = capsys.readouterr()
    assert "convy: scenarios/large.yaml: matrix: 70 variants, more than 64: give --max-variants 70 to play them all" in said.err
    assert "convy: scenarios/broken.yaml: judge: required" in said.err
    assert "Traceback" not in said.out + said.err
    (where / "scenarios" / "broken.yaml").unlink()
    assert main(["-C", str(where), "check", "--max-variants", "70"]) == 0
    said = capsys.readouterr()
    assert "  large: 70 variants (70 a)" in said.out
    assert "  refunds/upset: 4 variants (2 mood × 2 language)" in said.out
    assert main(["-C", str(where), "check", "--max-variants", "0"]) == 2
    assert "convy: --max-variants: must be between 1 and 10,000" in capsys.readouterr().err


def test_dry_run_says_the_variants_planned_and_a_glob_chooses_them_by_their_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convy run --dry-run --scenarios refunds/upset` plans the four variants; an exact variant id
    chooses that one alone."""
    where = project(tmp_path, {"upset.yaml": UPSET, "other.yaml": "script: [hi]\njudge: [ok]\n"})
    assert main(["-C", str(where), "run", "--dry-run", "--scenarios", "refunds/upset"]) == 0
    out = capsys.readouterr().out
    assert "bot: 4 scenarios × 2 attempts = 8 attempts" in out
    assert "  refunds/upset: 4 variants (2 mood × 2 language)" in out
    assert main(["-C", str(where), "run", "--dry-run", "--scenarios", "refunds/upset[mood=angry,language=German]"]) == 0
    out = capsys.readouterr().out
    assert "bot: 1 scenario × 2 attempts = 2 attempts" in out
    assert "  refunds/upset: 1 variant (1 mood × 1 language)" in out


def test_a_scenario_over_the_run_bound_of_attempts_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """64 variants × 200 attempts is more than a run's 10,000 attempts of a scenario: a
    configuration error naming the scenario, nothing played."""
    text = "user: '{{ a }}'\nmatrix: {a: [" + ", ".join(map(str, range(64))) + "]}\njudge: [ok]\n"
    where = project(tmp_path, {"s.yaml": text}, attempts=200)
    assert main(["-C", str(where), "run"]) == 2
    assert "convy: scenario s: matrix: 64 variants × 200 attempts = 12,800 attempts, more than 10,000" in capsys.readouterr().err
    assert not (where / "results").exists()


def test_each_variant_tells_its_user_its_own_values(tmp_path: Path) -> None:
    """The simulated user's model is told each variant's filled instructions, and the agent is sent
    each variant's filled script."""
    scenarios = Scenarios(folder(tmp_path, {"upset.yaml": UPSET})).every()
    user = FakeModel([STOP])
    agent = Echo()
    asyncio.run(Bench(agent, Models(user=user)).run(Plan(scenarios, 1), MemoryJournal()))
    told = sorted(next(said.content for said in request if said.role == "system") for request in user.requests)
    assert len(told) == 4
    for mood in ("calm", "angry"):
        for language in ("English", "German"):
            assert sum(f"You are a {mood} customer writing in {language}, order 1234." in prompt for prompt in told) == 1
    assert sorted(agent.messages) == ["Hello (English)", "Hello (English)", "Hello (German)", "Hello (German)"]


def runs(where: Path) -> list[Path]:
    return sorted((where / "results" / "bot").glob("*/run.json"), key=lambda path: path.stat().st_mtime_ns)


def test_run_json_tables_and_report_carry_the_variants(tmp_path: Path) -> None:
    """A matrix run keeps each variant's values in run.json; the tables' variant columns read in
    pandas make a column per key; the report's data has each key as a dimension."""
    pandas = pytest.importorskip("pandas")
    where = project(tmp_path, {"upset.yaml": UPSET, "plain.yaml": "script: [hi]\njudge: [{check: {said: hi}}]\n"})
    assert main(["-C", str(where), "run"]) == 0
    (kept,) = runs(where)
    spec = msgspec.json.decode(kept.read_bytes(), type=RunFile).spec
    variants = [one.variant for one in spec.scenarios if one.variant is not None]
    assert len(variants) == 4
    assert Variant("refunds/upset", {"mood": "angry", "language": "English"}) in variants
    assert main(["-C", str(where), "export", "--format", "jsonl"]) == 0
    attempts = pandas.read_json(where / "results" / "export" / "attempts.jsonl", lines=True)
    values = [json.loads(text) if isinstance(text, str) else {} for text in attempts["variant"]]
    attempts = attempts.join(pandas.DataFrame(values, index=attempts.index).add_prefix("variant_"))
    assert sorted(attempts.columns[attempts.columns.str.startswith("variant")]) == ["variant", "variant_language", "variant_mood", "variant_of"]
    angry = attempts[attempts["variant_mood"] == "angry"]
    assert len(angry) == 4
    assert set(angry["variant_of"]) == {"refunds/upset"}
    assert attempts[attempts["scenario"] == "plain"]["variant_of"].isna().all()
    assert main(["-C", str(where), "export"]) == 0
    scenarios = pandas.read_csv(where / "results" / "export" / "scenarios.csv", keep_default_na=False, na_values=[""])
    row = scenarios[scenarios["scenario"] == "refunds/upset[mood=calm,language=German]"].iloc[0]
    assert json.loads(row["variant"]) == {"mood": "calm", "language": "German"}
    assert row["group"] == "refunds"
    view = Summary(Project(where).read(kept.parent.name)).view()
    assert [(dim.key, [(one.value, one.passed, one.judged, one.variants) for one in dim.values]) for dim in view.variants] == [
        ("mood", [("calm", 4, 4, 2), ("angry", 4, 4, 2)]),
        ("language", [("English", 4, 4, 2), ("German", 4, 4, 2)]),
    ]
    shown = {one.id: (one.variant, one.variant_of) for one in view.scenarios}
    assert shown["refunds/upset[mood=angry,language=German]"] == ({"mood": "angry", "language": "German"}, "refunds/upset")
    assert shown["plain"] == ({}, "")


def test_dimensions_hand_computed() -> None:
    """Each value's rate is the mean of its variants' rates: one variant gets its exact interval,
    two a bootstrap over the variants (of 0.9 and 0.7 a mean of two draws is 0.7, 0.8 or 0.9, so
    its 95% interval is [0.7, 0.9])."""
    base = Scenario(id="u", judge=("ok",), user="{{ mood }} {{ tone }}", matrix={"mood": ["calm", "angry"], "tone": ["dry", "warm"]})
    variants = base.variants()
    tallies = {
        "u[mood=calm,tone=dry]": Tally(9, 10),
        "u[mood=calm,tone=warm]": Tally(7, 10),
        "u[mood=angry,tone=dry]": Tally(4, 10),
        "u[mood=angry,tone=warm]": Tally(0, 0),  # nothing judged: counted as a variant, not in the rate
    }
    (mood, tone) = Dimensions(variants, tallies).views()
    assert mood.key == "mood" and [one.value for one in mood.values] == ["calm", "angry"]
    calm, angry = mood.values
    assert (calm.variants, calm.passed, calm.judged, calm.method) == (2, 16, 20, "bootstrap")
    assert calm.rate is not None
    assert math.isclose(calm.rate.estimate, 0.8)
    # The bootstrap's [0.7, 0.9] held with the attempts' own noise: the exact interval of 16 of 20.
    assert (round(calm.rate.low, 4), round(calm.rate.high, 4)) == (0.5634, 0.9427)
    assert (angry.variants, angry.passed, angry.judged, angry.method) == (2, 4, 10, "exact")
    # Clopper–Pearson's interval of 4 of 10 at 95% (scipy's beta.ppf)
    assert angry.rate is not None
    assert math.isclose(angry.rate.estimate, 0.4)
    assert (round(angry.rate.low, 4), round(angry.rate.high, 4)) == (0.1216, 0.7376)
    assert [one.value for one in tone.values] == ["dry", "warm"]
    assert tone.values[1].judged == 10 and tone.values[1].method == "exact"


def test_compare_pairs_variants_and_lists_one_only_in_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs of a matrix, the second with a third mood: the variants both have are paired by
    id (same scenario, same values), the new ones listed as only in the candidate."""
    from convy.comparison import Comparison

    where = project(tmp_path, {"upset.yaml": UPSET}, attempts=1)
    assert main(["-C", str(where), "run"]) == 0
    (where / "scenarios" / "upset.yaml").write_text(UPSET.replace("[calm, angry]", "[calm, angry, polite]"), encoding="utf-8")
    assert main(["-C", str(where), "run"]) == 0
    base, candidate = (path.parent.name for path in runs(where))
    capsys.readouterr()
    code = main(["-C", str(where), "compare", base, candidate])
    assert code in (0, 4), capsys.readouterr().err
    view = Comparison(Project(where).read(base), Project(where).read(candidate)).view()
    assert view.only_base == []
    assert view.only_candidate == ["refunds/upset[mood=polite,language=English]", "refunds/upset[mood=polite,language=German]"]
    assert sorted(scenario for scenario, _, _ in Comparison(Project(where).read(base), Project(where).read(candidate)).strata()) == [
        "refunds/upset[mood=angry,language=English]",
        "refunds/upset[mood=angry,language=German]",
        "refunds/upset[mood=calm,language=English]",
        "refunds/upset[mood=calm,language=German]",
    ]


TOKENS_AGENT = (
    "from convy.agent import Answer, Usage\n"
    "from convy.fakes import FakeAgent\n"
    "agent = FakeAgent(lambda text: Answer(text, Usage(10, 0)))\n"
)


def test_a_matrix_run_resumes_and_rejudges_by_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A matrix run stopped by its budget is finished by `convy resume` with every variant's
    attempts; `convy rejudge` decides each variant's dialogues again under the same variant."""
    where = project(tmp_path, {"upset.yaml": UPSET}, agent=TOKENS_AGENT)
    assert main(["-C", str(where), "run", "--max-tokens", "30"]) == 6
    (kept,) = runs(where)
    run = kept.parent.name
    assert main(["-C", str(where), "resume", run, "--max-tokens", "1000"]) == 0
    lines = (kept.parent / "attempts.jsonl").read_bytes().splitlines()
    played = sorted((one["scenario"], one["attempt"]) for one in map(json.loads, lines))
    ids = [one.id for one in Scenarios(where / "scenarios").every()]
    assert played == sorted((scenario, attempt) for scenario in ids for attempt in (1, 2))
    capsys.readouterr()
    assert main(["-C", str(where), "rejudge", run]) == 0, capsys.readouterr().err
    again = [path for path in runs(where) if path.parent.name != run]
    (rejudged,) = again
    lines = (rejudged.parent / "attempts.jsonl").read_bytes().splitlines()
    decided = {(one["scenario"], one["attempt"]): one["transcript"]["turns"][0]["message"] for one in map(json.loads, lines)}
    assert sorted(decided) == played
    for (scenario, _), first in decided.items():
        assert first == ("Hello (German)" if "language=German" in scenario else "Hello (English)")


def test_a_user_told_of_no_value_is_refused_where_the_simulator_prompt_is_filled() -> None:
    """A variant's told prompt is its own: Prompt's slots filled from the variant's vars."""
    (variant, *_) = Scenario(id="x", judge=("ok",), user="{{ mood }}", matrix={"mood": ["calm", "angry"]}).variants()
    assert variant.told(Prompt("[{{ instructions }}] {{ mood }}")) == "[calm] calm"


def test_personas_are_part_of_the_scenarios_fingerprint(tmp_path: Path) -> None:
    """personas.yaml fills the variants as the scenario files do: changing it changes the
    fingerprint of the scenarios a run keeps (and a comparison leaves the changed variants out)."""
    where = project(tmp_path, {"s.yaml": "user: '{{ age }}'\nmatrix: {persona: all}\njudge: [ok]\n"})
    (where / "personas.yaml").write_text(PERSONAS, encoding="utf-8")
    prompt = Prompt("{{ instructions }}")
    before = Project(where).fingerprints("bot", prompt).scenarios
    (where / "personas.yaml").write_text(PERSONAS.replace("78", "79"), encoding="utf-8")
    assert Project(where).fingerprints("bot", prompt).scenarios != before
