"""Broken scenario files, and the one line each gives: the file, the field, and what is wrong."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import hypothesis
import pytest
from hypothesis import strategies

from convy.pattern import Pattern
from convy.problems import ScenarioError
from convy.scenario import Scenario
from convy.scenarios import Scenarios

GRADED = "  - claim: the agent was polite\n    grades: [rude, neutral, warm]\n"

# (case, file text, the exact message it gives)
BROKEN: list[tuple[str, str, str]] = [
    (
        "unknown top-level field",
        "user: I want a refund\njudge: [the agent helped]\ncolour: red\n",
        "scenarios/refund.yaml: colour: unknown field; the fields here are id, judge, user, vars, script, max_turns, tags, matrix, fail_under, tools, state, approvals",
    ),
    (
        "unknown field in a judge entry",
        "user: I want a refund\njudge:\n  - claim: the agent helped\n    weight: 2\n",
        "scenarios/refund.yaml: judge[0].weight: unknown field; the fields here are claim, grades, pass, check",
    ),
    (
        "unknown field in a check",
        "user: I want a refund\njudge:\n  - check: {called: refund, whith: {order: A1}}\n",
        "scenarios/refund.yaml: judge[0].check.whith: unknown field; did you mean with?",
    ),
    (
        "missing judge",
        "user: I want a refund\n",
        "scenarios/refund.yaml: judge: required",
    ),
    (
        "empty judge list",
        "user: I want a refund\njudge: []\n",
        "scenarios/refund.yaml: judge: give at least one claim",
    ),
    (
        "judge given as text, not a list",
        "user: I want a refund\njudge: the agent helped\n",
        "scenarios/refund.yaml: judge: expected a list, got text",
    ),
    (
        "an empty claim",
        "user: I want a refund\njudge: ['  ']\n",
        "scenarios/refund.yaml: judge[0]: an empty claim",
    ),
    (
        "a judge entry that is a number",
        "user: I want a refund\njudge: [3]\n",
        "scenarios/refund.yaml: judge[0]: expected text or a mapping, got a whole number",
    ),
    (
        "a rule with grades but no claim",
        "user: I want a refund\njudge:\n  - grades: [bad, good]\n    pass: good\n",
        "scenarios/refund.yaml: judge[0].claim: give the claim, or a check",
    ),
    (
        "neither user nor script",
        "judge: [the agent helped]\n",
        "scenarios/refund.yaml: user: a scenario needs a user, a script, or both",
    ),
    (
        "user given as nothing",
        "user:\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: user: expected text, got nothing",
    ),
    (
        "slot in user with no value in vars",
        "user: 'I want a refund for order {{ order }}'\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: user: no value for {{ order }} in vars",
    ),
    (
        "a var that is a list",
        "user: I want a refund\njudge: [the agent helped]\nvars: {order: [A1, A2]}\n",
        "scenarios/refund.yaml: vars.order: expected text, a number or true/false, got a list",
    ),
    (
        "a var with no value",
        "user: I want a refund\njudge: [the agent helped]\nvars: {order: }\n",
        "scenarios/refund.yaml: vars.order: expected text, a number or true/false, got nothing",
    ),
    (
        "a var whose key is a number",
        "user: I want a refund\njudge: [the agent helped]\nvars: {1: A1}\n",
        "scenarios/refund.yaml: vars: expected text as a key, got a whole number",
    ),
    (
        "grades with one grade",
        "user: I want a refund\njudge:\n  - the agent helped\n  - claim: the agent was polite\n"
        "    grades: [rude]\n    pass: rude\n",
        "scenarios/refund.yaml: judge[1].grades: give at least two, worst first",
    ),
    (
        "duplicate grades",
        "user: I want a refund\njudge:\n  - the agent helped\n  - claim: the agent was polite\n"
        "    grades: [rude, rude, warm]\n    pass: warm\n",
        "scenarios/refund.yaml: judge[1].grades: 'rude' given twice",
    ),
    (
        "grades without pass",
        f"user: I want a refund\njudge:\n{GRADED}",
        "scenarios/refund.yaml: judge[0].pass: give the worst grade that still passes",
    ),
    (
        "pass not in grades",
        f"user: I want a refund\njudge:\n  - the agent helped\n{GRADED}    pass: great\n",
        "scenarios/refund.yaml: judge[1].pass: must be one of the grades: rude, neutral, warm",
    ),
    (
        "pass without grades",
        "user: I want a refund\njudge:\n  - claim: the agent was polite\n    pass: warm\n",
        "scenarios/refund.yaml: judge[0].pass: goes only with grades",
    ),
    (
        "check with two kinds",
        "user: I want a refund\njudge:\n  - check: {called: refund, said: sorry}\n",
        "scenarios/refund.yaml: judge[0].check: give exactly one of called, not_called, said, not_said, state, asked_approval, not_asked_approval, said_done",
    ),
    (
        "check with no kind",
        "user: I want a refund\njudge:\n  - check: {}\n",
        "scenarios/refund.yaml: judge[0].check: give exactly one of called, not_called, said, not_said, state, asked_approval, not_asked_approval, said_done",
    ),
    (
        "check beside a claim",
        "user: I want a refund\njudge:\n  - claim: the agent helped\n    check: {said: sorry}\n",
        "scenarios/refund.yaml: judge[0].check: a check stands alone, with no claim, grades or pass beside it",
    ),
    (
        "with without called",
        "user: I want a refund\njudge:\n  - check: {not_called: refund, with: {order: A1}}\n",
        "scenarios/refund.yaml: judge[0].check.with: goes only with called",
    ),
    (
        "invalid regex in said",
        "user: I want a refund\njudge:\n  - check: {said: '(refund'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: missing ): (refund",
    ),
    (
        "invalid regex in not_said",
        "user: I want a refund\njudge:\n  - the agent helped\n  - check: {not_said: '[a-'}\n",
        "scenarios/refund.yaml: judge[1].check.not_said: not a pattern convy can match: missing ]: [a-",
    ),
    # What Python's re reads but RE2 does not: each refused with what RE2 lacks.
    (
        "a lookbehind",
        "user: I want a refund\njudge:\n  - check: {said: '(?<=full )refund'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: invalid perl operator: (?<= "
        "(RE2 syntax: no lookaround, atomic groups or (?P=name); the flags are i, m, s and U)",
    ),
    (
        "a negative lookahead",
        "user: I want a refund\njudge:\n  - ok\n  - check: {not_said: 'refund(?! denied)'}\n",
        "scenarios/refund.yaml: judge[1].check.not_said: not a pattern convy can match: invalid perl operator: (?! "
        "(RE2 syntax: no lookaround, atomic groups or (?P=name); the flags are i, m, s and U)",
    ),
    (
        "a backreference",
        "user: I want a refund\njudge:\n  - check: {said: '(\\w+) \\1'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: invalid escape sequence: \\1 "
        "(RE2 syntax: no backreferences; \\z for the end, \\x{...} for a code point)",
    ),
    (
        "an atomic group",
        "user: I want a refund\njudge:\n  - check: {said: '(?>a+)b'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: invalid perl operator: (?> "
        "(RE2 syntax: no lookaround, atomic groups or (?P=name); the flags are i, m, s and U)",
    ),
    (
        "a possessive repeat",
        "user: I want a refund\njudge:\n  - check: {said: 'a++b'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: bad repetition operator: ++ "
        "(RE2 syntax: no possessive repeats)",
    ),
    (
        "Python's end of text",
        "user: I want a refund\njudge:\n  - check: {said: 'refund\\Z'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: invalid escape sequence: \\Z "
        "(RE2 syntax: no backreferences; \\z for the end, \\x{...} for a code point)",
    ),
    (
        "a verbose pattern",
        "user: I want a refund\njudge:\n  - check: {said: '(?x) refund'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: invalid perl operator: (?x "
        "(RE2 syntax: no lookaround, atomic groups or (?P=name); the flags are i, m, s and U)",
    ),
    (
        "a count with no lower bound, which RE2 reads as text",
        "user: I want a refund\njudge:\n  - check: {said: 'refund!{,3}'}\n",
        "scenarios/refund.yaml: judge[0].check.said: {,3} would be matched as text: write {0,3} to repeat, or \\{,3}",
    ),
    (
        "nested counts past RE2's limit",
        "user: I want a refund\njudge:\n  - check: {said: '(a{100}){100}'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: invalid repetition size: {100} "
        "(at most 1,000 repeats, nested counts multiplied)",
    ),
    (
        "a count past RE2's limit",
        "user: I want a refund\njudge:\n  - check: {said: 'a{1001}'}\n",
        "scenarios/refund.yaml: judge[0].check.said: a repetition of more than 1,000 in the pattern",
    ),
    (
        "a pattern whose error holds msgspec's own separator",
        "user: I want a refund\njudge:\n  - check: {said: '(x - at `y'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: missing ): (x - at `y",
    ),
    (
        "max_turns 0",
        "user: I want a refund\njudge: [the agent helped]\nmax_turns: 0\n",
        "scenarios/refund.yaml: max_turns: must be at least 1",
    ),
    (
        "max_turns a string",
        "user: I want a refund\njudge: [the agent helped]\nmax_turns: many\n",
        "scenarios/refund.yaml: max_turns: expected a whole number, got text",
    ),
    (
        "max_turns a fraction",
        "user: I want a refund\njudge: [the agent helped]\nmax_turns: 2.5\n",
        "scenarios/refund.yaml: max_turns: expected a whole number, got a number",
    ),
    (
        "script longer than max_turns",
        "script: [hello, my order is late, where is it]\njudge: [the agent helped]\nmax_turns: 2\n",
        "scenarios/refund.yaml: script: 3 messages, more than max_turns (2)",
    ),
    (
        "empty script message",
        "script: [hello, '   ']\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: script[1]: an empty message",
    ),
    (
        "empty id",
        "id: ''\nuser: I want a refund\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: id: must not be empty",
    ),
    (
        "id a number",
        "id: 7\nuser: I want a refund\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: id: expected text, got a whole number",
    ),
    (
        "tags given as text",
        "user: I want a refund\njudge: [the agent helped]\ntags: urgent\n",
        "scenarios/refund.yaml: tags: expected a list, got text",
    ),
    (
        "a tag that is a number",
        "user: I want a refund\njudge: [the agent helped]\ntags: [urgent, 2]\n",
        "scenarios/refund.yaml: tags[1]: expected text, got a whole number: write it in quotes, '2'",
    ),
    (
        "duplicate key in YAML",
        "user: I want a refund\njudge: [the agent helped]\nuser: I want it now\n",
        "scenarios/refund.yaml: line 3, column 1: the key 'user' is given twice",
    ),
    (
        "a list, not a mapping",
        "- user: I want a refund\n- judge: [the agent helped]\n",
        "scenarios/refund.yaml: must be a mapping of fields (id, user, script, judge, ...)",
    ),
    (
        "an empty file",
        "",
        "scenarios/refund.yaml: empty: a scenario needs at least a judge and a user or a script",
    ),
    (
        "a file with only a comment",
        "# to do\n",
        "scenarios/refund.yaml: empty: a scenario needs at least a judge and a user or a script",
    ),
    (
        "a dollar sign left bare in a said pattern",
        "script: [price?]\njudge:\n  - check: {said: 'costs $4.99'}\n",
        "scenarios/refund.yaml: judge[0].check.said: /costs $4.99/ can never match: $ is the end of the reply "
        "(or of a line, with (?m)), and text follows it; write \\$ for a dollar sign",
    ),
    (
        "a caret after text",
        "script: [maths]\njudge:\n  - check: {not_said: 'x^2'}\n",
        "scenarios/refund.yaml: judge[0].check.not_said: /x^2/ can never match: ^ is the start of the reply "
        "(or of a line, with (?m)), and text comes before it; write \\^ for a caret",
    ),
    (
        "an empty alternative at the end",
        "script: [refund please]\njudge:\n  - check: {said: 'refund|'}\n",
        "scenarios/refund.yaml: judge[0].check.said: /refund|/ matches every reply, even an empty one, so the check "
        "always holds: drop the empty alternative: /refund/",
    ),
    (
        "a pattern that is only flags",
        "script: [refund please]\njudge:\n  - check: {not_said: '(?s)'}\n",
        "scenarios/refund.yaml: judge[0].check.not_said: /(?s)/ matches every reply, even an empty one, so the check "
        "always fails: give it text the reply must not hold",
    ),
    (
        "a pattern left empty beside another",
        "script: [refund please]\njudge:\n  - check: {said: refund, not_said: ''}\n",
        "scenarios/refund.yaml: judge[0].check.not_said: empty, and an empty pattern matches every reply: give the "
        "text to look for, or leave not_said out",
    ),
    (
        "a tool's name left blank",
        "script: [refund please]\njudge:\n  - check: {called: '  '}\n",
        "scenarios/refund.yaml: judge[0].check.called: empty: give the tool's name, or leave called out",
    ),
    (
        "a with value left null",
        "script: [seat 12A]\njudge:\n  - check: {called: change_seat, with: {seat: }}\n",
        "scenarios/refund.yaml: judge[0].check.with.seat: no value (YAML reads seat: with nothing after it as null): "
        "write the value the agent must pass, in quotes when it is text (seat: '12A'), or null for a null",
    ),
    (
        "a with value left out of a list",
        "script: [seat 12A]\njudge:\n  - check:\n      called: change_seat\n      with:\n        seats:\n          - 12A\n          -\n",
        "scenarios/refund.yaml: judge[0].check.with.seats[1]: no value (YAML reads - with nothing after it as null): "
        "write the value the agent must pass, in quotes when it is text (- '12A'), or null for a null",
    ),
    (
        "a slot in the id",
        "id: 'refund-{{ order }}'\nvars: {order: A1}\nscript: ['refund {{ order }}']\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: id: 'refund-{{ order }}' has a slot, and an id is never filled: write the id itself "
        "(a matrix adds its values to each variant's id, as seat[seat=12A])",
    ),
    (
        "a slot in a tag",
        "tags: ['{{ order }}']\nvars: {order: A1}\nscript: ['refund {{ order }}']\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: tags[0]: '{{ order }}' has a slot, and a tag is never filled: write the tag itself",
    ),
    (
        "a tag with a space after it",
        "tags: ['smoke ']\nscript: [refund]\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: tags[0]: 'smoke ' has spaces round it, and --tag matches a tag as written: write 'smoke'",
    ),
    (
        "a tag given twice in two cases",
        "tags: [smoke, Smoke]\nscript: [refund]\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: tags[1]: 'Smoke' is tags[0] 'smoke' in another case, and --tag matches a tag as "
        "written: keep one spelling",
    ),
    (
        "a tag given twice",
        "tags: [smoke, smoke]\nscript: [refund]\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: tags[1]: 'smoke' is given already, at tags[0]: leave one out",
    ),
    (
        "a var in one pair of braces",
        "vars: {order: A1}\nscript: ['refund {order}', '{{ order }}']\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: script[0]: {order} would stay as written, one pair of braces: did you mean {{ order }}, or \\{order} for the braces themselves?",
    ),
    (
        "a matrix key in one pair of braces in a check",
        "matrix: {order: [A1, B2]}\nscript: ['refund {{ order }}']\njudge:\n  - check: {said: '{order}}'}\n",
        "scenarios/refund.yaml: judge[0].check.said: {order}} would stay as written, one pair of braces: did you mean {{ order }}, or \\{order} for the braces themselves?",
    ),
    (
        "a check in quotes",
        "script: [refund]\njudge:\n  - 'check: {called: refund}'\n",
        "scenarios/refund.yaml: judge[0]: 'check: {called: refund}' is in quotes, so it is a claim's text the judge "
        "would be asked, but it reads as a check: write it without the quotes, - check: {called: refund}",
    ),
    (
        "a bare said in quotes",
        "script: [refund]\njudge:\n  - 'said: refund'\n",
        "scenarios/refund.yaml: judge[0]: 'said: refund' is in quotes, so it is a claim's text the judge "
        "would be asked, but it reads as a check: write it without the quotes, - check: {said: refund}",
    ),
    (
        "a matrix under vars",
        "vars:\n  matrix: {order: [A1]}\nscript: [refund]\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: vars.matrix: not a value: matrix is a field of the scenario; it belongs at the top "
        "of the file, not under vars",
    ),
    (
        "a matrix value with a space after it",
        "matrix: {order: [A1, 'A1 ']}\nscript: ['refund {{ order }}']\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: matrix.order[1]: 'A1 ' has spaces round it, which would be in the variant's id and "
        "in every text it fills: write 'A1'",
    ),
]


def bomb(levels: int, where: str = "with") -> str:
    """A scenario whose check's ``with:`` (or whose ``vars:``) holds an alias bomb of ``levels`` levels."""
    rows = ["lol"] * 9
    anchors = [f"a0: &a0 [{', '.join(rows)}]"]
    anchors += [f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]" for level in range(1, levels)]
    if where == "with":
        return "user: hi\njudge:\n  - check:\n      called: t\n      with:\n" + "".join(f"        {row}\n" for row in anchors)
    return "user: hi\njudge: [ok]\nvars:\n" + "".join(f"  {row}\n" for row in anchors)


BOUNDED = "aliases repeat more than 10,000 values or 100,000 characters; write the data out instead"

# Hostile files (issue 7, item 8): each one line naming the file and the field, or the line
# where no field can be named.
HOSTILE: list[tuple[str, str, str]] = [
    (
        "a list as a key",
        "user: hi\njudge: [ok]\nvars:\n  ? [a, b]\n  : 1\n",
        "scenarios/refund.yaml: vars: expected text as a key, got a list",
    ),
    (
        "a mapping as a key at the top",
        "user: hi\njudge: [ok]\n? {a: 1}\n: 2\n",
        "scenarios/refund.yaml: line 3, column 3: expected text as a key, got a mapping",
    ),
    (
        "a number as a key at the top",
        "user: hi\njudge: [ok]\n1: x\n",
        "scenarios/refund.yaml: line 3, column 1: expected text as a key, got a whole number",
    ),
    (
        "an empty key",
        "user: hi\njudge: [ok]\n'': x\n",
        "scenarios/refund.yaml: line 3, column 1: a key is empty",
    ),
    (
        "a key holding a terminal escape",
        'user: hi\njudge: [ok]\nvars: {"a\\e[2J": 1}\n',
        "scenarios/refund.yaml: vars: a key holds a control character or a line break",
    ),
    (
        "a key holding a line break at the top",
        'user: hi\njudge: [ok]\n"a\\nb": 1\n',
        "scenarios/refund.yaml: line 3, column 1: a key holds a control character or a line break",
    ),
    (
        "a key of 201 characters",
        "user: hi\njudge: [ok]\nvars: {" + "k" * 201 + ": 1}\n",
        "scenarios/refund.yaml: vars: a key longer than 200 characters",
    ),
    (
        "a scalar tag on a list",
        "user: !!str [a, b]\njudge: [ok]\n",
        "scenarios/refund.yaml: user: the tag !!str does not fit a list",
    ),
    (
        "an unknown key near a known one",
        "user: hi\njudeg: [ok]\n",
        "scenarios/refund.yaml: judeg: unknown field; did you mean judge?",
    ),
    (
        "an unknown key in a judge entry",
        "user: hi\njudge:\n  - claim: ok\n    grade: [bad, good]\n",
        "scenarios/refund.yaml: judge[0].grade: unknown field; did you mean grades?",
    ),
    (
        "nesting 600 deep",
        "user: hi\njudge: [ok]\nvars: " + "[" * 600 + "]" * 600 + "\n",
        "scenarios/refund.yaml: vars: nested more than 64 levels deep",
    ),
    (
        "nesting 600 deep in a check's with",
        "user: hi\njudge:\n  - check:\n      called: t\n      with: {a: " + "[" * 600 + "]" * 600 + "}\n",
        "scenarios/refund.yaml: judge: nested more than 64 levels deep",
    ),
    (
        "a repetition count past any limit",
        "user: hi\njudge:\n  - check: {said: 'a{4294967296}'}\n",
        "scenarios/refund.yaml: judge[0].check.said: a repetition of more than 1,000 in the pattern",
    ),
    (
        "an upper repetition count past any limit",
        "user: hi\njudge:\n  - check: {not_said: 'a{2,99999999999999999999}'}\n",
        "scenarios/refund.yaml: judge[0].check.not_said: a repetition of more than 1,000 in the pattern",
    ),
    (
        "a pattern too large for RE2's memory",
        "user: hi\njudge:\n  - check: {said: '" + "\\pL{1000}" * 30 + "'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: pattern too large - compile failed "
        "(it would take more than 8 MiB to match)",
    ),
    (
        "an unclosed pattern of 100,000 characters, cut short in the message",
        "user: hi\njudge:\n  - check: {said: '(" + "x" * 100_000 + "'}\n",
        "scenarios/refund.yaml: judge[0].check.said: not a pattern convy can match: missing ): (" + "x" * 88 + "...",
    ),
    (
        "!!int on text",
        "user: !!int abc\njudge: [ok]\n",
        "scenarios/refund.yaml: user: not a whole number",
    ),
    (
        "!!bool on text",
        "user: hi\njudge: [ok]\nvars: {a: !!bool maybe}\n",
        "scenarios/refund.yaml: vars.a: not true or false",
    ),
    (
        "a merge key",
        "base: &b {x: 1}\nuser: hi\njudge: [ok]\nvars: {<<: *b}\n",
        "scenarios/refund.yaml: vars: merge keys (<<) are not supported: write the fields out",
    ),
    (
        "a merge key whose value fails to construct",
        "user: hi\njudge: [ok]\nvars:\n  <<: {a: !!int abc}\n",
        "scenarios/refund.yaml: vars: merge keys (<<) are not supported: write the fields out",
    ),
    (
        "a Python tag",
        "user: !!python/object/apply:os.system [ls]\njudge: [ok]\n",
        "scenarios/refund.yaml: user: the tag !!python/object/apply:os.system is not allowed: write plain YAML",
    ),
    (
        "a set",
        "user: hi\njudge: [ok]\ntags: !!set {a, b}\n",
        "scenarios/refund.yaml: tags: the tag !!set is not allowed: write plain YAML",
    ),
    (
        "a timestamp",
        "user: hi\njudge: [ok]\nvars: {when: !!timestamp 2024-01-01}\n",
        "scenarios/refund.yaml: vars.when: the tag !!timestamp is not allowed: write plain YAML",
    ),
    (
        "a number that is not finite",
        "user: hi\njudge: [ok]\nvars: {a: .nan}\n",
        "scenarios/refund.yaml: vars.a: not a finite number",
    ),
    (
        "a number past a float",
        "user: hi\njudge: [ok]\nvars: {a: 1.0e999}\n",
        "scenarios/refund.yaml: vars.a: not a finite number",
    ),
    (
        "a whole number past 64 bits",
        "user: hi\njudge: [ok]\nmax_turns: 99999999999999999999999999\n",
        "scenarios/refund.yaml: max_turns: a whole number too large to keep",
    ),
    ("an alias bomb of 6 levels in a check's with", bomb(6), f"scenarios/refund.yaml: judge[0].check.with.a4[0]: {BOUNDED}"),
    ("an alias bomb of 9 levels in a check's with", bomb(9), f"scenarios/refund.yaml: judge[0].check.with.a4[0]: {BOUNDED}"),
    ("an alias bomb of 30 levels in vars", bomb(30, "vars"), f"scenarios/refund.yaml: vars.a4[0]: {BOUNDED}"),
    (
        "an alias inside its own anchor",
        "user: hi\njudge: [ok]\nvars: &a {x: *a}\n",
        "scenarios/refund.yaml: vars.x: the alias *a is used inside its own anchor",
    ),
    (
        "a NUL character",
        "user: hi\0\njudge: [ok]\n",
        "scenarios/refund.yaml: line 1: the character U+0000 is not allowed in YAML",
    ),
    (
        "a file larger than a megabyte",
        "user: hi\njudge: [ok]\n# " + "x" * 1024 * 1024 + "\n",
        "scenarios/refund.yaml: larger than 1 MB",
    ),
]

# Bytes that are not UTF-8: the line of the first one is named.
UNREADABLE: list[tuple[str, bytes, str]] = [
    ("a byte that is not UTF-8", b"user: hi\njudge: [ok\xff]\n", "scenarios/refund.yaml: line 2: not UTF-8 text (byte 0xff)"),
    (
        "a lone surrogate written as UTF-8 bytes",
        b"user: hi \xed\xa0\x80\njudge: [ok]\n",
        "scenarios/refund.yaml: line 1: not UTF-8 text (byte 0xed)",
    ),
]

# YAML syntax errors: the message names the file and the line; the rest is PyYAML's.
STARTS: list[tuple[str, str, str]] = [
    (
        "unclosed list",
        "user: I want a refund\njudge: [the agent helped\n",
        "scenarios/refund.yaml: line 3, column 1: ",
    ),
    (
        "tab for indent",
        "user: I want a refund\n\tjudge: [the agent helped]\n",
        "scenarios/refund.yaml: line 2, column 1: ",
    ),
    (
        "a lone surrogate written as an escape",
        'user: "\\ud800"\njudge: [ok]\n',
        "scenarios/refund.yaml: line 1, column ",
    ),
    (
        "two documents",
        "user: hi\njudge: [ok]\n---\nuser: again\n",
        "scenarios/refund.yaml: line 3, column 1: ",
    ),
    (
        "unclosed quote",
        "user: 'I want a refund\njudge: [the agent helped]\n",
        "scenarios/refund.yaml: line 3, column 1: ",
    ),
]


def problem(folder: Path) -> ScenarioError:
    with pytest.raises(ScenarioError) as raised:
        Scenarios(folder).every()
    return raised.value


def written(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "scenarios"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def read(tmp_path: Path, text: str) -> Scenario:
    (scenario,) = Scenarios(written(tmp_path, {"refund.yaml": text})).every()
    return scenario


@pytest.mark.parametrize(("case", "text", "expected"), BROKEN, ids=[case for case, _, _ in BROKEN])
def test_broken_file_gives_its_exact_message(tmp_path: Path, case: str, text: str, expected: str) -> None:
    """A broken scenario file is a ScenarioError whose one line names the file, the field and the fault."""
    error = problem(written(tmp_path, {"refund.yaml": text}))
    assert error.problems == (expected,)
    assert str(error) == expected


@pytest.mark.parametrize(("case", "text", "start"), STARTS, ids=[case for case, _, _ in STARTS])
def test_yaml_syntax_error_names_the_line(tmp_path: Path, case: str, text: str, start: str) -> None:
    """A YAML syntax error is one line naming the file and the line, then PyYAML's words."""
    error = problem(written(tmp_path, {"refund.yaml": text}))
    assert len(error.problems) == 1
    assert error.problems[0].startswith(start)
    assert len(error.problems[0]) > len(start)


def test_two_files_with_the_same_id(tmp_path: Path) -> None:
    """Two files giving one id: the later file is reported, naming the earlier one."""
    body = "id: refund\nuser: I want a refund\njudge: [the agent helped]\n"
    error = problem(written(tmp_path, {"a.yaml": body, "b.yaml": body}))
    assert error.problems == ("scenarios/b.yaml: id: 'refund' is also the id of scenarios/a.yaml",)


def test_explicit_id_clashing_with_a_default_id(tmp_path: Path) -> None:
    """A file whose id is another file's default id (its path) clashes with that file."""
    error = problem(
        written(
            tmp_path,
            {
                "refunds/damaged.yaml": "user: My parcel came broken\njudge: [the agent helped]\n",
                "zz.yaml": "id: refunds/damaged\nuser: I want a refund\njudge: [the agent helped]\n",
            },
        )
    )
    assert error.problems == (
        "scenarios/zz.yaml: id: 'refunds/damaged' is also the id of scenarios/refunds/damaged.yaml",
    )


def test_every_broken_file_reported_together(tmp_path: Path) -> None:
    """Two broken files beside a sound one give one error with one line for each broken file."""
    error = problem(
        written(
            tmp_path,
            {
                "good.yaml": "user: Hello\njudge: [the agent greeted back]\n",
                "orders/late.yaml": "user: Where is my order?\njudge: []\n",
                "refund.yaml": "user: I want a refund\njudge: [the agent helped]\nmax_turns: 0\n",
            },
        )
    )
    assert error.problems == (
        "scenarios/orders/late.yaml: judge: give at least one claim",
        "scenarios/refund.yaml: max_turns: must be at least 1",
    )
    assert str(error).splitlines() == list(error.problems)


def test_missing_folder(tmp_path: Path) -> None:
    """A project without a scenarios folder is a ScenarioError naming the folder."""
    error = problem(tmp_path / "scenarios")
    assert error.problems == ("scenarios/: no such folder of scenarios (one scenario per file: scenarios/<id>.yaml)",)


def test_yaml_1_1_booleans_stay_text(tmp_path: Path) -> None:
    """no, yes and off are text in values, and on stays the text key "on", as YAML 1.2 reads them."""
    scenario = read(tmp_path, "user: Hello\njudge: [ok]\nvars: {answer: no, flag: yes, on: off}\n")
    assert scenario.vars == {"answer": "no", "flag": "yes", "on": "off"}
    assert all(type(key) is str and type(value) is str for key, value in scenario.vars.items())


def test_true_is_a_bool(tmp_path: Path) -> None:
    """true and false are the only booleans."""
    scenario = read(tmp_path, "user: Hello\njudge: [ok]\nvars: {vip: true, banned: false}\n")
    assert scenario.vars == {"vip": True, "banned": False}
    assert type(scenario.vars["vip"]) is bool


def test_leading_zero_and_dates_stay_text(tmp_path: Path) -> None:
    """012 is not octal and 2024-01-01 is not a date: both stay the text written."""
    scenario = read(tmp_path, "user: Hello\njudge: [ok]\nvars: {code: 012, since: 2024-01-01, count: 12, price: 9.5}\n")
    assert scenario.vars == {"code": "012", "since": "2024-01-01", "count": 12, "price": 9.5}
    assert type(scenario.vars["count"]) is int


def test_vars_fill_the_user_slots(tmp_path: Path) -> None:
    """A slot with a value in vars is accepted, whatever the value's kind."""
    scenario = read(
        tmp_path, "user: 'Order {{ order }}, answer {{ answer }}'\njudge: [ok]\nvars: {order: 12, answer: no}\n"
    )
    assert scenario.vars == {"order": 12, "answer": "no"}


def test_default_id_is_the_path_under_scenarios(tmp_path: Path) -> None:
    """A file without an id gets its path under scenarios/ without .yaml, subfolders included."""
    scenarios = Scenarios(
        written(
            tmp_path,
            {
                "refunds/damaged.yaml": "user: My parcel came broken\njudge: [the agent helped]\n",
                "off-topic.yaml": "id: chatter\nuser: Nice weather\njudge: [the agent stayed on topic]\n",
            },
        )
    ).every()
    assert sorted(scenario.id for scenario in scenarios) == ["chatter", "refunds/damaged"]


def test_broken_scenario_stops_the_command(tmp_path: Path) -> None:
    """`python -m convy run` on a broken scenario exits 2 naming the file and field, with no traceback and no run."""
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "a.py").write_text("from convy.fakes import Echo\n\nagent = Echo()\n", encoding="utf-8")
    written(project, {"refund.yaml": f"script: [hello]\njudge:\n{GRADED}    pass: great\n"})
    done = subprocess.run(
        [sys.executable, "-m", "convy", "run"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "scenarios/refund.yaml: judge[0].pass: must be one of the grades" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not (project / "results").exists()


@pytest.mark.parametrize(("case", "text", "expected"), HOSTILE, ids=[case for case, _, _ in HOSTILE])
def test_hostile_file_gives_one_line_within_bounds(tmp_path: Path, case: str, text: str, expected: str) -> None:
    """A hostile scenario file is one ScenarioError line naming the file and field, read within 20 MB of memory."""
    folder = written(tmp_path, {"refund.yaml": text})
    tracemalloc.start()
    try:
        error = problem(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error.problems == (expected,)
    assert peak < 20 * 1024 * 1024


@pytest.mark.parametrize(("case", "raw", "expected"), UNREADABLE, ids=[case for case, _, _ in UNREADABLE])
def test_bytes_that_are_not_utf8_name_the_line(tmp_path: Path, case: str, raw: bytes, expected: str) -> None:
    """A file with bytes that are not UTF-8 is one line naming the file, the line and the byte."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "refund.yaml").write_bytes(raw)
    assert problem(folder).problems == (expected,)


def test_a_pattern_nested_5000_deep_is_read_and_matched(tmp_path: Path) -> None:
    """Groups nested 5000 deep, past what Python's re could compile, are read: RE2 parses them without recursing."""

    (rule,) = read(tmp_path, "user: hi\njudge:\n  - check: {said: '" + "(" * 5000 + "a" + ")" * 5000 + "'}\n").judge
    assert rule.check is not None and Pattern(rule.check.said).found("xa") == "a"


def test_an_alias_used_a_few_times_is_read(tmp_path: Path) -> None:
    """Aliases within the budget still work: an anchored text used again is read as that text."""
    scenario = read(tmp_path, "user: &u Hello there\nscript: [*u, *u]\njudge: [ok]\n")
    assert scenario.script == ("Hello there", "Hello there")


def test_a_spec_that_cannot_be_kept_leaves_no_folder(tmp_path: Path) -> None:
    """A run whose spec cannot be written as JSON is a ConfigurationError and leaves no run folder, not even run.lock."""
    from convy.bench import Bench
    from convy.fakes import Echo
    from convy.judge import Models
    from convy.model import Absent
    from convy.problems import ConfigurationError
    from convy.records import RunSpec
    from convy.storage import RunJournal

    scenario = Scenario(id="s", judge=("ok",), script=("hi \ud800",))
    spec = RunSpec(id="r", agent="a", scenarios=(scenario,), attempts=1, limits=Bench(Echo(), Models(Absent(), Absent())).limits)
    folder = tmp_path / "results" / "a" / "r"
    with pytest.raises(ConfigurationError, match="run r cannot be kept"):
        asyncio.run(RunJournal(folder).play(spec, Bench(Echo(), Models(Absent(), Absent()))))
    assert not folder.exists()


HOSTILE_COMMAND = [
    ("a list as a key", "script: [hello]\njudge: [ok]\nvars:\n  ? [a, b]\n  : 1\n", "vars: expected text as a key, got a list"),
    ("nesting 600 deep", "script: [hello]\njudge: [ok]\nvars: " + "[" * 600 + "]" * 600 + "\n", "vars: nested more than 64 levels deep"),
    ("a repetition count", "script: [hello]\njudge:\n  - check: {said: 'a{4294967296}'}\n", "judge[0].check.said: a repetition"),
    (
        "a lookbehind, which RE2 would log if let",
        "script: [hello]\njudge:\n  - check: {said: '(?<=a)b'}\n",
        "judge[0].check.said: not a pattern convy can match: invalid perl operator: (?<=",
    ),
    ("a lone surrogate", 'script: [hello]\njudge: [ok]\nuser: "a \\udc80"\n', "line 3, column "),
    ("!!int on text", "script: [hello]\njudge: [ok]\nmax_turns: !!int abc\n", "max_turns: not a whole number"),
    ("a merge key", "script: [hello]\njudge: [ok]\nvars:\n  <<: {a: !!int abc}\n", "vars: merge keys (<<)"),
    ("an alias bomb", bomb(9).replace("user: hi", "script: [hello]"), f"judge[0].check.with.a4[0]: {BOUNDED}"),
]


@pytest.mark.parametrize(("case", "text", "expected"), HOSTILE_COMMAND, ids=[case for case, _, _ in HOSTILE_COMMAND])
def test_hostile_file_stops_the_command(tmp_path: Path, case: str, text: str, expected: str) -> None:
    """`convy run` on a hostile scenario file exits 2 with one line naming the file and field, no traceback, no results/."""
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "a.py").write_text("from convy.fakes import Echo\n\nagent = Echo()\n", encoding="utf-8")
    written(project, {"refund.yaml": text})
    done = subprocess.run(
        [sys.executable, "-m", "convy", "run"], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"convy: scenarios/refund.yaml: {expected}")
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stdout + done.stderr
    assert not (project / "results").exists()


def bounded_memory() -> None:
    """Run in the child: at most 2 GB of address space, so a text blown up to gigabytes is a
    MemoryError there rather than the machine's memory filling up."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2_000_000 * 1024, 2_000_000 * 1024))


def test_a_slot_repeated_with_a_long_value_is_refused_at_load_without_filling_it(tmp_path: Path) -> None:
    """A 900 KB file whose ``user:`` repeats ``{{ a }}`` 100,000 times, with ``a`` 200,000 characters
    long, would fill 20 GB of instructions: `convy run` refuses it at load, naming the file and
    the field, within 2 GB of memory, with exit 2 and no traceback."""
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "a.py").write_text("from convy.fakes import Echo\n\nagent = Echo()\n", encoding="utf-8")
    text = 'user: "' + "{{ a }}" * 100_000 + '"\njudge: [ok]\nvars:\n  a: ' + "y" * 200_000 + "\n"
    written(project, {"bomb.yaml": text})
    done = subprocess.run(
        [sys.executable, "-m", "convy", "run"],
        cwd=project, capture_output=True, text=True, timeout=120, preexec_fn=bounded_memory,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "convy: scenarios/bomb.yaml: user: the filled instructions would be 19,073.5 MB, more than 1 MB\n",
    )
    assert "Traceback" not in done.stdout
    assert not (project / "results").exists()


def test_a_simulator_prompt_that_would_fill_too_large_is_refused_before_any_request(tmp_path: Path) -> None:
    """The simulator prompt is filled with each scenario's instructions: one that would be larger
    than 1 MB is a configuration error naming the prompt's file and the scenario."""
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "a.py").write_text("from convy.fakes import Echo\n\nagent = Echo()\n", encoding="utf-8")
    (project / "models.py").write_text(
        "from convy.fakes import FakeJudge, FakeModel\nfrom convy import Models\n\n"
        "models = Models(user=FakeModel(['Thanks. ###STOP###']), judge=FakeJudge())\n"
    )
    (project / "pyproject.toml").write_text('[tool.convy]\nuser_prompt = "prompt.md"\n')
    (project / "prompt.md").write_text("{{ instructions }} " * 2000 + "{{ stop }}")
    written(project, {"s.yaml": "user: " + "x" * 1000 + "\njudge: [ok]\n"})
    done = subprocess.run([sys.executable, "-m", "convy", "run"], cwd=project, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (2, "convy: prompt.md: the filled text would be 1.9 MB, more than 1 MB for scenario s\n")
    assert not (project / "results").exists()


@hypothesis.settings(max_examples=300, derandomize=True, deadline=None)
@hypothesis.given(
    pieces=strategies.lists(
        strategies.one_of(strategies.text(max_size=5), strategies.sampled_from(["{{ a }}", "{{b}}", "{{  a\t}}", "{{ c }}", "\\{{ a }}"])),
        max_size=8,
    ),
    a=strategies.one_of(strategies.text(max_size=5), strategies.integers(), strategies.booleans(), strategies.floats()),
    b=strategies.text(max_size=5),
)
def test_the_size_of_a_filled_prompt_is_counted_exactly_without_filling_it(pieces: list[str], a: object, b: str) -> None:
    """``Prompt.size`` is the length in UTF-8 of the text ``filled`` makes, whatever the slots,
    escaped ``\\{{`` and values (a text with a stray ``{{`` is refused, not filled)."""
    from convy.prompt import Prompt
    from convy.slots import Slotted

    prompt = Prompt("".join(pieces))
    hypothesis.assume(not Slotted(prompt.text).stray())
    values = {"a": a, "b": b, "c": ""}
    assert prompt.size(values) == len(prompt.filled(values).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("kind", ["a FIFO", "/dev/zero"])
def test_a_scenario_file_that_is_not_a_regular_file_stops_the_command(tmp_path: Path, kind: str) -> None:
    """A FIFO named x.yaml under scenarios/, or a link to /dev/zero: `convy run` exits 2 in one line naming it, neither waiting for a writer nor reading without end, and writes nothing."""
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "a.py").write_text("from convy.fakes import Echo\n\nagent = Echo()\n", encoding="utf-8")
    written(project, {"hello.yaml": "script: [hello]\njudge:\n  - check: {said: hello}\n"})
    if kind == "a FIFO":
        os.mkfifo(project / "scenarios" / "x.yaml")
    else:
        (project / "scenarios" / "x.yaml").symlink_to("/dev/zero")
    done = subprocess.run(
        [sys.executable, "-m", "convy", "run"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == ["convy: scenarios/x.yaml: cannot be read: not a regular file"]
    assert "Traceback" not in done.stdout + done.stderr
    assert not (project / "results").exists()


def test_the_simulator_prompt_is_checked_as_the_simulated_user_is_told_it(tmp_path: Path) -> None:
    """Before a run, a scenario whose user leaves a slot of the simulator prompt empty is one line
    naming the prompt's file and the scenario; filled, it is the very text its simulated user is told."""
    from convy.model import Absent
    from convy.problems import ConfigurationError
    from convy.project import Project
    from convy.prompt import Prompt
    from convy.settings import Settings

    prompt = Prompt("You are {{ name }}. {{ instructions }} Say {{ stop }} when done.")
    settings = Settings(user_prompt="prompts/user.md")
    lacking = Scenario(id="refund", user="Ask for a refund of your {{ item }}.", vars={"item": "kettle"}, script=("hi",), judge=("polite",))
    with pytest.raises(ConfigurationError) as raised:
        Project(tmp_path).fitting(prompt, settings, (lacking,))
    assert str(raised.value) == "prompts/user.md: no value for {{ name }} for scenario refund"
    named = Scenario(id="refund", user=lacking.user, vars={"item": "kettle", "name": "Ann"}, script=("hi",), judge=("polite",))
    Project(tmp_path).fitting(prompt, settings, (named,))
    told = named.simulated(Absent(), prompt).prompt
    assert told == named.told(prompt)
    assert told.startswith("You are Ann. Ask for a refund of your kettle. Say ")


# A file with several problems names every one of them, each on its own line (issue 25, item 5).
SEVERAL: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "an unknown field beside a pass that is not a grade",
        "user: hi\ncolour: red\njudge:\n  - claim: polite\n    grades: [rude, ok, warm]\n    pass: nice\n",
        ("colour: unknown field; the fields here are id, judge, user, vars, script, max_turns, tags, matrix, fail_under, tools, state, approvals", "judge[0].pass: must be one of the grades: rude, ok, warm"),
    ),
    (
        "pass written at the top of the file, under no claim",
        "user: hi\njudge:\n  - claim: polite\n    grades: [rude, ok, warm]\npass: warm\n",
        ("pass: not a field here; it belongs under judge[0]", "judge[0].pass: give the worst grade that still passes"),
    ),
    (
        "a check's with written beside the check",
        "user: hi\njudge:\n  - check: {called: refund}\n    with: {order: A1}\n",
        ("judge[0].with: not a field here; it belongs under judge[0].check",),
    ),
    (
        "a scenario's field written inside a claim",
        "user: hi\njudge:\n  - claim: ok\n    max_turns: 3\n",
        ("judge[0].max_turns: not a field here; it belongs at the top of the file",),
    ),
    (
        "pass at the top with two graded claims",
        "user: hi\njudge:\n  - claim: a\n    grades: [x, y]\n    pass: y\n  - claim: b\n    grades: [x, y]\n    pass: y\n  - claim: c\n    grades: [x, y]\npass: y\n",
        ("pass: not a field here; it belongs under judge[2]", "judge[2].pass: give the worst grade that still passes"),
    ),
    (
        "every field's own problem and every slot",
        "user: 'hi {{ ordr }}'\nvars: {order: 1}\nmax_turns: 0\nfail_under: 80\njudge:\n  - 'ok {{ nme }}'\n  - check: {said: '{{ x }}'}\n",
        (
            "max_turns: must be at least 1",
            "fail_under: must be between 0 and 1 (0.8 for 80%)",
            "judge[0]: no value for {{ nme }} in vars",
            "judge[1].check.said: no value for {{ x }} in vars",
            "user: no value for {{ ordr }} in vars (is {{ ordr }} a slip for {{ order }}?)",
        ),
    ),
    (
        "two wrong kinds and an unknown field in a claim",
        "user: hi\nmax_turns: many\ntags: urgent\njudge:\n  - claim: ok\n    weight: 2\n",
        ("judge[0].weight: unknown field; the fields here are claim, grades, pass, check", "max_turns: expected a whole number, got text", "tags: expected a list, got text"),
    ),
]


@pytest.mark.parametrize(("case", "text", "expected"), SEVERAL, ids=[case for case, _, _ in SEVERAL])
def test_every_problem_of_a_file_is_named(tmp_path: Path, case: str, text: str, expected: tuple[str, ...]) -> None:
    """Each problem of one file is a line of its own, not only the first msgspec met."""
    error = problem(written(tmp_path, {"refund.yaml": text}))
    assert sorted(error.problems) == sorted(f"scenarios/refund.yaml: {line}" for line in expected)


@pytest.mark.parametrize(
    "pattern",
    [
        "(?m)^Sure", "end$", "(12A$)|14C", "costs \\$4\\.99", "[$]4", "[]$]x", "^$", "a$?b", "(?i)refund|credit", "\\d+\\^2",
        # found by the second outside audit: text in \Q...\E, an anchor among alternatives, a code
        # point or a class in braces, a class holding braces, a group opening before a caret
        "\\Q$5\\E", "\\Q$5.00\\E", "x\\Qa^b\\E", "(?:USD|$)5", "don\\x{2019}t", "[\\x{2018}\\x{2019}']", "[{,}]",
        "\\p{Greek}{2}", "\\P{Greek}+", "(?:^a)", "(?i:^hi)", "(?P<w>^x)", "(?m)Hi$\\n", "a$|b", "[[:alpha:]]{2}",
    ],
)
def test_a_sound_pattern_with_anchors_is_read(tmp_path: Path, pattern: str) -> None:
    """Anchors where they can match, escaped or in a class or in \\Q...\\E are not refused, nor
    braces that are no count."""
    quoted = pattern.replace("'", "''")
    scenario = read(tmp_path, f"script: [Hi]\njudge:\n  - check: {{said: '{quoted}'}}\n")
    assert scenario.judge[0].check.said == pattern  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("pattern", "anchor"),
    [
        ("costs $4.99", "$"), ("x^2", "^"), ("Hi$\n", "$\n"), ("Hi$\\n", "$\n"), ("a\n^b", "\n^"), ("a$b|c$d", "$"),
        ("\\Q5\\E$x", "$"), ("(?:a$)b", "$"), ("\\x{2019}^s", "^"), ("(?:a|b)$c", "$"),
        ("a$b|c", ""), ("(?:USD|$)5", ""), ("(?m)Hi$\n", ""), ("(a$)?b", ""), ("a\\b^", ""),
    ],
)
def test_a_stranded_anchor_is_said_only_when_certain(pattern: str, anchor: str) -> None:
    """An anchor is said to strand its pattern only when no alternative could match: one alternative
    of the whole pattern or of its group that is sound is enough to keep quiet."""
    assert Pattern(pattern).stranded() == anchor


@pytest.mark.parametrize("pattern", ["don\\x{2019}t", "\\p{Greek}{2}", "\\P{L}", "[{,}]", "[\\x{2018}\\x{2019}]", "\\Q{,3}\\E"])
def test_braces_that_are_no_count_are_read(pattern: str) -> None:
    """A code point's braces, a property's, and braces in a class or in \\Q...\\E are no count."""
    assert Pattern(pattern).problem() == ""


def test_a_claim_that_starts_with_check_is_a_claim(tmp_path: Path) -> None:
    """A quoted entry that starts "check:" but reads as no check is a claim's text, read as it is."""
    scenario = read(tmp_path, "script: [Hi!]\njudge:\n  - 'check: the agent greets the user back'\n  - 'check:'\n")
    assert scenario.judge == ("check: the agent greets the user back", "check:")


def test_a_tag_in_another_case_is_said_with_its_spelling(tmp_path: Path) -> None:
    """`--tag Smoke` where the tag is `smoke` is named with the spelling there is."""
    from convy.scenarios import Matching

    scenarios = Scenarios(written(tmp_path, {"a.yaml": "tags: [smoke]\nscript: [Hi]\njudge: [ok]\n"})).every()
    matching = Matching(tags=("Smoke",))
    assert matching.unmatched(scenarios)
    assert matching.missed(scenarios) == "no scenario matches: --tag Smoke: no scenario has it; a tag is matched as written: --tag smoke"


def test_a_pattern_unsound_with_its_slots_is_said_once(tmp_path: Path) -> None:
    """A pattern stranded as written and still once filled is one line, not one for each."""
    error = problem(written(tmp_path, {"refund.yaml": "vars: {x: '5'}\nscript: [Hi]\njudge:\n  - check: {said: 'costs $4 {{ x }}'}\n"}))
    assert error.problems == (
        "scenarios/refund.yaml: judge[0].check.said: /costs $4 {{ x }}/ can never match: $ is the end of the reply "
        "(or of a line, with (?m)), and text follows it; write \\$ for a dollar sign",
    )
