#!/usr/bin/env python3
"""Differential-conformance oracle for Aerie's ClassAd crate.

Generates seeded random ClassAd expressions (with two random ads, MY and TARGET) and evaluates
them with HTCondor's own libclassad (the `htcondor` wheel: `import htcondor2` FIRST, then
`classad2`), writing one JSON line per case:

    {"expr": ..., "my": ..., "target": ..., "type": T, "value": V}

in exactly the encoding `cmctl eval --jsonl` uses (see issue 2): T is one of undefined, error,
boolean, integer, real, string, list, classad, abstime, reltime, parse_error; reals are JSON
numbers or "inf"/"-inf"/"nan"; times are seconds; lists are arrays of {type, value}; ClassAds
are objects attribute -> {type, value}, each attribute evaluated in its ad. Two extra types mark
cases the reference could not judge: reference_crash (the library crashed the process) and
reference_timeout.

Modes:
  classad_gen.py --seed S --count N [--corpus general|lists] [--out FILE] [--jobs J]
                              generate + evaluate (the general corpus, or lists and nested ads)
  classad_gen.py --eval       stdin: {"expr","my","target"} lines -> the lines above
  classad_gen.py --unparse    stdin: {"expr"} lines -> {"expr", "unparse"} or parse_error
  classad_gen.py --old-ads    stdin: {"text"} lines -> {"ads": [{attr: unparsed expr}, ...]}

The reference can crash (e.g. on a bare `parent`) or hang, so every evaluation happens in a
worker subprocess that a supervisor restarts, recording the case it died on.

Time-dependent functions (time, currentTime, dayTime, random, timeZoneOffset, absTime() without
arguments, formatTime() without arguments) are never generated: their results differ between
two runs. The hand-written cases check them with deterministic predicates instead.
"""

import json
import math
import os
import random
import re
import selectors
import subprocess
import sys
import tempfile
import threading

HERE = os.path.abspath(__file__)
CASE_TIMEOUT_SECS = 5.0
# Nesting limit of the value encoding (both encoders use the same one): deeper ads/lists are
# written as {"type": "classad"|"list", "value": "depth-limit"}.
ENCODE_DEPTH_LIMIT = 12  # must equal classad::json::ENCODE_DEPTH_LIMIT

# ---------------------------------------------------------------------------------------------
# Random generator
# ---------------------------------------------------------------------------------------------

ATTR_NAMES = ["A", "B", "C", "D", "Cpus", "Memory", "Name", "Owner", "L", "N", "S", "R", "T",
              "Rt", "Requirements", "Rank", "x", "y"]
NESTED_NAMES = ["a", "b", "c", "p", "q", "Name"]

STRINGS = [
    "", "a", "abc", "ABC", "Abc", "hello world", "x,y,z", "a, b ,c", "a b c", "1,2,3",
    "1.5, 2.5, -3", "foo@bar.edu", "slot1@host.example.com", "slot1_2@host", "user@", "@dom",
    "nodomain", "1.2.3", "1.10.0", "8.9.7a", "23.9.6", "10", " 12 ", "-7", "1e3", "3.25", "0x1F",
    "017", "true", "false", "TRUE", "abc123", "quote\"inside", "back\\slash", "tab\there",
    "new\nline", "unicodé", "日本", "%Y-%m-%d", "%H:%M:%S", "%c", "%%", "%s", "2020-01-01T00:00:00Z",
    "2021-06-15 12:30:45", "1+02:03:04", "-00:00:10", "12:00", "5", "A=1 B=2", "A=1;B=2",
    "one two 'three four'", "\"quoted args\" x", "a;b;c", "a|b|c", "*", ".*", "^a", "b$", "(a)(b)",
    "[a-c]+", "a{2}", "\\d+", "A", "B", "C", "a,b,c,a", "x", "nan", "inf", "-inf",
]
REGEXES = ["a", "^a", "b$", ".*", "a.c", "(a)(b)?", "[a-c]+", "\\d+", "^$", "A", "x|y", "(", "[",
           "a{2,}", "(\\w+)@(\\w+)", "^slot", "é", "\\\\"]
REGEX_OPTS = ["", "i", "m", "s", "x", "f", "g", "is", "I", "q", "ig"]
VERSIONS = ["1", "1.2", "1.2.3", "1.10", "1.9", "8.9.7a", "8.9.7", "23.9.6", "23.10.0", "a",
            "", "1.2.3.4.5", "v1", "001", "1..2"]
TIME_FORMATS = ["%Y", "%m/%d/%Y", "%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z", "%c", "%A %B", "%j %U %w",
                "%%", "%s", "", "plain", "%e %k %l %p", "%Z", "%D %T", "%y"]
CMP_OPS = ["<", "<=", "==", "!=", ">=", ">", "=?=", "is", "=!=", "isnt", "bogus", "=", ""]
ABSTIME_STRS = ["2020-01-01T00:00:00Z", "2020-06-15T12:30:45+05:30", "1999-12-31T23:59:59-08:00",
                "2038-01-19T03:14:08Z", "1970-01-01T00:00:00Z", "2020-02-29T12:00:00",
                "2021-13-01T00:00:00Z", "garbage", "2020-01-01", "20200101T000000Z",
                "2020-01-01T00:00:00.5Z"]
RELTIME_STRS = ["1+02:03:04", "-00:00:10", "12:00", "5", "00:00:01.5", "1d", "2+00:00:00",
                "-1+12:00:00", "garbage", "1:2:3", "100"]
ENV_STRS = ["A=1;B=2", "A=1 B=2", "A=\"x y\" B=2", "", "A", "A=1;;B", "PATH=/bin:/usr/bin"]
ARG_STRS = ["a b c", "\"a b\" c", "'a b' c", "a\\ b", "", "x 'y z' \"w\"", "  spaced  "]

INT_LITS = ["0", "1", "2", "3", "-1", "7", "10", "42", "100", "255", "1024", "-17", "65536",
            "2147483647", "2147483648", "4294967296", "9223372036854775807",
            "-9223372036854775807", "9223372036854775806", "1000000007"]
# Hexadecimal and octal literals: the reference's parser rejects them (ExprTree() parses through
# the old-ClassAd-compatible path), so they are generated rarely.
HEX_OCT_LITS = ["0x1F", "0xff", "017", "010"]
REAL_LITS = ["0.0", "-0.0", "1.0", "1.5", "-2.5", "0.1", "0.2", "3.14159", "1e10", "1E-5",
             "2.5e+3", ".5", "1e308", "1.7976931348623157e308", "1e-308", "5e-324", "4.9e-324",
             "2.2250738585072014e-308", "123456789.125", "1e15", "1e16", "1e17", "1e100",
             "-1e300", "9007199254740993.0", "0.5", "2.0", "1e-7", "100.0", "1.0e0", "3.0"]
STR_ESCAPES = ["\\n", "\\t", "\\\"", "\\\\", "\\'", "\\r", "\\b", "\\f", "\\101", "\\7",
               "\\x", "\\u00e9"]

UNARY_OPS = ["-", "+", "!", "~"]
BINARY_OPS = ["*", "/", "%", "+", "-", "<<", ">>", ">>>", "<", "<=", ">", ">=", "==", "!=",
              "=?=", "=!=", "is", "isnt", "&", "^", "|", "&&", "||"]

# Every builtin of HTCondor 23's libclassad (src/classad/fnCall.cpp) and of the condor
# compatibility layer (src/condor_utils/compat_classad.cpp), with argument signatures used to
# build "valid" calls. "*" repeats the previous kind 0..3 times.
# Skipped here (nondeterministic; checked by hand-written deterministic cases instead):
# time, currentTime, dayTime, random, timeZoneOffset.
FUNCTIONS = {
    "isUndefined": [["any"]], "isError": [["any"]], "isString": [["any"]],
    "isInteger": [["any"]], "isReal": [["any"]], "isList": [["any"]], "isClassAd": [["any"]],
    "isBoolean": [["any"]], "isAbstime": [["any"]], "isReltime": [["any"]],
    "member": [["any", "list"], ["scalar", "list"]],
    "identicalMember": [["any", "list"], ["scalar", "list"]],
    "size": [["list"], ["str"], ["ad"]],
    "sum": [["numlist"]], "avg": [["numlist"]], "min": [["numlist"]], "max": [["numlist"]],
    "anyCompare": [["cmpop", "list", "scalar"]], "allCompare": [["cmpop", "list", "scalar"]],
    "getYear": [["abstime"]], "getMonth": [["abstime"]], "getDayOfYear": [["abstime"]],
    "getDayOfMonth": [["abstime"]], "getDayOfWeek": [["abstime"]], "getDays": [["reltime"]],
    "getHours": [["reltime"]], "getMinutes": [["reltime"]], "getSeconds": [["reltime"]],
    "splitTime": [["abstime"], ["reltime"]],
    "formatTime": [["abstime"], ["abstime", "timefmt"], ["int", "timefmt"]],
    "strcat": [["scalar", "*"]], "join": [["str", "list"], ["str", "scalar", "*"], ["list"]],
    "toUpper": [["str"]], "toLower": [["str"]],
    "substr": [["str", "int"], ["str", "int", "int"]],
    "strcmp": [["str", "str"]], "stricmp": [["str", "str"]],
    "versioncmp": [["version", "version"]], "versionLE": [["version", "version"]],
    "versionLT": [["version", "version"]], "versionGE": [["version", "version"]],
    "versionGT": [["version", "version"]], "versionEQ": [["version", "version"]],
    "version_in_range": [["version", "version", "version"]],
    "regexp": [["regex", "str"], ["regex", "str", "regopts"]],
    "regexpMember": [["regex", "strlist_l"], ["regex", "strlist_l", "regopts"]],
    "regexps": [["regex", "str", "str"], ["regex", "str", "subst", "regopts"]],
    "replace": [["regex", "str", "subst"], ["regex", "str", "subst", "regopts"]],
    "replaceAll": [["regex", "str", "subst"], ["regex", "str", "subst", "regopts"]],
    "int": [["scalar"]], "real": [["scalar"]], "string": [["scalar"]], "bool": [["scalar"]],
    "absTime": [["abstime_str"], ["int"], ["ad_time"], ["int", "int"]],
    "relTime": [["reltime_str"], ["num"]],
    "unparse": [["attr"]], "unresolved": [["attr"]],
    "floor": [["num"]], "ceil": [["num"]], "ceiling": [["num"]], "round": [["num"]],
    "pow": [["num", "num"], ["int", "int"]],
    "quantize": [["num", "num"], ["num", "numlist"]],
    "ifThenElse": [["any", "any", "any"]],
    "interval": [["num"]],
    "eval": [["exprstr"]],
    "stringListsIntersect": [["strlist", "strlist"], ["strlist", "strlist", "delim"]],
    "debug": [["any"]],
    "envV1ToV2": [["envstr"]], "mergeEnvironment": [["envstr", "*"]],
    "listToArgs": [["strlist_l"]], "argsToList": [["argstr"]],
    "stringListSize": [["strlist"], ["strlist", "delim"]],
    "stringListSum": [["strlist"], ["strlist", "delim"]],
    "stringListAvg": [["strlist"], ["strlist", "delim"]],
    "stringListMin": [["strlist"], ["strlist", "delim"]],
    "stringListMax": [["strlist"], ["strlist", "delim"]],
    "stringListMember": [["str", "strlist"], ["str", "strlist", "delim"]],
    "stringListIMember": [["str", "strlist"], ["str", "strlist", "delim"]],
    "stringListSubsetMatch": [["strlist", "strlist"], ["strlist", "strlist", "delim"]],
    "stringListISubsetMatch": [["strlist", "strlist"], ["strlist", "strlist", "delim"]],
    "stringList_regexpMember": [["regex", "strlist"], ["regex", "strlist", "delim"],
                                ["regex", "strlist", "delim", "regopts"]],
    "userHome": [["str"], ["str", "str"]],
    "userMap": [["str", "str"], ["str", "str", "str"], ["str", "str", "str", "str"]],
    "splitUserName": [["str"]], "splitSlotName": [["str"]],
    "split": [["str"], ["str", "delim"]],
    "evalInEachContext": [["ctxexpr", "adlist"]], "countMatches": [["ctxexpr", "adlist"]],
}


def quote(s):
    """A ClassAd string literal for s."""
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


class Gen:
    """Random expression generator; one instance per case with its own names in scope."""

    def __init__(self, rng, my_names, target_names, in_ad=False):
        self.r = rng
        self.my = my_names          # attribute names defined in MY
        self.target = target_names  # attribute names defined in TARGET
        self.bare = my_names        # bare names allowed at this point (must resolve in MY)
        # In an ad's attribute values only the references in self.my/self.target are allowed:
        # they are chosen so that references never form a cycle (the reference library hangs
        # on some circular MY./TARGET. references instead of reporting them).
        self.in_ad = in_ad

    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def allowed(self, ref):
        if not self.in_ad:
            return True
        parts = ref.split(".")
        if len(parts) < 2:
            return False
        return (parts[0] == "MY" and parts[1] in self.my) or \
            (parts[0] == "TARGET" and parts[1] in self.target)

    def fixed(self, refs):
        """One of the fixed references `refs` allowed here, else a literal."""
        ok = [x for x in refs if self.allowed(x)]
        return self.pick(ok) if ok else self.literal()

    # --- literals -----------------------------------------------------------------------
    def string_lit(self):
        r = self.r.random()
        if r < 0.75:
            return quote(self.pick(STRINGS))
        parts = []
        for _ in range(self.r.randint(1, 4)):
            parts.append(self.pick(STR_ESCAPES) if self.r.random() < 0.5
                         else self.pick(["a", "B", " ", "1", "é", ",", "x"]))
        return '"' + "".join(parts) + '"'

    def literal(self):
        k = self.r.random()
        if k < 0.25:
            if self.r.random() < 0.01:
                return self.pick(HEX_OCT_LITS)
            return self.pick(INT_LITS)
        if k < 0.45:
            return self.pick(REAL_LITS)
        if k < 0.65:
            return self.string_lit()
        if k < 0.75:
            return self.pick(["true", "false", "TRUE", "False"])
        if k < 0.82:
            return self.pick(["undefined", "error", "UNDEFINED", "Error"])
        if k < 0.91:
            return self.abstime()
        return self.reltime()

    def abstime(self):
        k = self.r.random()
        if k < 0.5:
            return "absTime(%s)" % quote(self.pick(ABSTIME_STRS[:6]))
        if k < 0.8:
            return "absTime(%d)" % self.pick([0, 1, 86399, 1600000000, 1700000000, -86400,
                                              2147483648, 946684800])
        return "absTime(%d, %d)" % (self.pick([0, 1600000000, 1700000000]),
                                     self.pick([0, 3600, -28800, 19800]))

    def reltime(self):
        if self.r.random() < 0.5:
            return "relTime(%s)" % quote(self.pick(RELTIME_STRS[:7]))
        return "relTime(%s)" % self.pick(["0", "1", "59", "3600", "86400", "90061", "-5",
                                          "1.5", "0.25", "-3661.5", "1e6"])

    # --- compound values ------------------------------------------------------------------
    def list_lit(self, depth, elem=None):
        n = self.r.randint(0, 4)
        elem = elem or (lambda: self.expr(depth - 1))
        return "{" + ", ".join(elem() for _ in range(n)) + "}"

    def ad_lit(self, depth):
        n = self.r.randint(0, 3)
        names = self.r.sample(NESTED_NAMES, n)
        saved = self.bare
        # bare names inside the nested ad may refer to its own earlier attributes (never a
        # cycle) or to the enclosing scope's
        parts = []
        for i, nm in enumerate(names):
            self.bare = list(saved) + names[:i]
            parts.append("%s = %s" % (nm, self.expr(depth - 1)))
        self.bare = saved
        body = "; ".join(parts)
        return "[" + body + "]"

    def attr_ref(self):
        k = self.r.random()
        if k < 0.4 and self.my:
            return "MY." + self.pick(self.my)
        if k < 0.75 and self.target:
            return "TARGET." + self.pick(self.target)
        if k < 0.9 and self.bare:
            return self.pick(self.bare)
        if k < 0.95:
            return self.pick(["MY", "TARGET"]) + "." + self.pick(["Missing", "zz"])
        return self.fixed(["MY.N.a", "TARGET.N.b", "MY.N.p", "TARGET.N", "MY.L", "TARGET.L"])

    # --- expressions ------------------------------------------------------------------------
    def expr(self, depth):
        if depth <= 0:
            return self.leaf()
        k = self.r.random()
        if k < 0.18:
            return self.leaf()
        if k < 0.26:
            return self.pick(UNARY_OPS) + self.paren(self.expr(depth - 1))
        if k < 0.50:
            a, b = self.expr(depth - 1), self.expr(depth - 1)
            return "%s %s %s" % (self.paren(a), self.pick(BINARY_OPS), self.paren(b))
        if k < 0.54:
            return "%s ? %s : %s" % (self.paren(self.expr(depth - 1)),
                                     self.paren(self.expr(depth - 1)),
                                     self.paren(self.expr(depth - 1)))
        if k < 0.56:
            return "%s ?: %s" % (self.paren(self.expr(depth - 1)), self.paren(self.expr(depth - 1)))
        if k < 0.80:
            return self.call(depth)
        if k < 0.85:
            return self.list_lit(depth)
        if k < 0.88:
            return self.ad_lit(depth)
        if k < 0.94:
            return self.subscript(depth)
        if k < 0.97:
            return self.selection(depth)
        return self.unparenthesized_chain(depth)

    def paren(self, e):
        # The unparsed text must keep the intended tree: wrap everything but atoms.
        if all(c.isalnum() or c in "._\"" for c in e) and not e.startswith("-"):
            return e
        return "(" + e + ")"

    def unparenthesized_chain(self, depth):
        """Operators without parentheses, to exercise precedence and associativity."""
        n = self.r.randint(2, 5)
        parts = [self.leaf()]
        for _ in range(n):
            op = self.pick(BINARY_OPS + ["?"])
            if op == "?":
                parts.append("? %s :" % self.leaf())
            else:
                parts.append(op)
            if self.r.random() < 0.2:
                parts.append(self.pick(UNARY_OPS))
            parts.append(self.leaf())
        return " ".join(parts)

    def leaf(self):
        return self.literal() if self.r.random() < 0.6 else self.attr_ref()

    def subscript(self, depth):
        k = self.r.random()
        if k < 0.5:
            base = self.list_lit(depth) if self.r.random() < 0.6 else self.fixed(
                ["MY.L", "TARGET.L", "MY.S", "MY.N"])
            idx = self.pick(["0", "1", "2", "-1", "4", "1.0", "1.7", "true", '"a"', "undefined",
                             "error", self.fixed(["MY.A", "TARGET.B"])])
            return "%s[%s]" % (self.paren(base), idx)
        base = self.ad_lit(depth) if self.r.random() < 0.5 else self.fixed(
            ["MY.N", "TARGET.N", "MY", "TARGET"])
        idx = quote(self.pick(NESTED_NAMES + ATTR_NAMES[:6] + ["zz", "A"])) \
            if self.r.random() < 0.8 else self.expr(depth - 1)
        return "%s[%s]" % (self.paren(base), idx)

    def selection(self, depth):
        # (never a list literal: selection on a list crashes the reference)
        base = self.pick([self.ad_lit(depth), self.fixed(["MY.N", "TARGET.N", "MY.A"]),
                          "(" + self.expr(depth - 1) + ")"])
        return "%s.%s" % (self.paren(base), self.pick(NESTED_NAMES + ["zz"]))

    def call(self, depth):
        name = self.pick(sorted(FUNCTIONS))
        sigs = FUNCTIONS[name]
        if self.r.random() < 0.15:
            # formatTime() and absTime() without arguments read the clock: never generated
            lo = 1 if name in ("formatTime", "absTime") else 0
            args = [self.expr(depth - 1) for _ in range(self.r.randint(lo, 4))]
        else:
            sig = self.pick(sigs)
            args = []
            for i, kind in enumerate(sig):
                if kind == "*":
                    for _ in range(self.r.randint(0, 3)):
                        args.append(self.arg(sig[i - 1], depth))
                else:
                    args.append(self.arg(kind, depth))
            if self.r.random() < 0.1 and args:  # one argument of a random type
                args[self.r.randrange(len(args))] = self.expr(depth - 1)
        if self.r.random() < 0.1:
            name = self.pick([name.lower(), name.upper()])
        return "%s(%s)" % (name, ", ".join(args))

    def arg(self, kind, depth):
        r, d = self.r, depth - 1
        if r.random() < 0.12:  # any argument may be an expression producing it
            return self.expr(d)
        if kind == "any":
            return self.expr(d)
        if kind == "scalar":
            return self.literal() if r.random() < 0.7 else self.attr_ref()
        if kind == "int":
            return self.pick(["0", "1", "2", "3", "-1", "-2", "5", "10", "100", "1600000000",
                              "-3", "7"])
        if kind == "num":
            return self.pick(INT_LITS[:12] + REAL_LITS + ["-1.5", "2.5", "-0.5", "0.49999999999999994"])
        if kind == "str":
            return self.string_lit() if r.random() < 0.9 else self.attr_ref()
        if kind == "list":
            return self.list_lit(depth) if r.random() < 0.8 else self.fixed(["MY.L", "TARGET.L"])
        if kind == "numlist":
            return self.list_lit(depth, lambda: self.arg("num", d)) if r.random() < 0.85 \
                else self.list_lit(depth)
        if kind == "strlist_l":
            return self.list_lit(depth, lambda: quote(self.pick(STRINGS[:12])))
        if kind == "strlist":
            return quote(self.pick(["a,b,c", "a, b, c", "", "a", "1,2,3", "1, 2.5, -3",
                                    "a b c", "A,B", "x;y;z", "a,,b", " , ", "b,a", "1,x,2",
                                    "c,b,a,b", "10, 9, 100", "1e3,2", "a|b"]))
        if kind == "delim":
            return quote(self.pick([",", ";", " ", "|", ", ", "", ",;", "x"]))
        if kind == "regex":
            return quote(self.pick(REGEXES))
        if kind == "regopts":
            return quote(self.pick(REGEX_OPTS))
        if kind == "subst":
            return quote(self.pick(["X", "\\1", "<\\0>", "\\2-\\1", "", "\\9", "$1"]))
        if kind == "version":
            return quote(self.pick(VERSIONS))
        if kind == "timefmt":
            return quote(self.pick(TIME_FORMATS))
        if kind == "cmpop":
            return quote(self.pick(CMP_OPS))
        if kind == "abstime":
            return self.abstime() if r.random() < 0.85 else self.fixed(["MY.T", "TARGET.T"])
        if kind == "reltime":
            return self.reltime() if r.random() < 0.85 else self.fixed(["MY.Rt", "TARGET.Rt"])
        if kind == "abstime_str":
            return quote(self.pick(ABSTIME_STRS))
        if kind == "reltime_str":
            return quote(self.pick(RELTIME_STRS))
        if kind == "ad_time":
            return self.pick(["[ Year = 2020; Month = 2; Day = 29 ]", "splitTime(absTime(0))",
                              "[ x = 1 ]"])
        if kind == "ad":
            return self.ad_lit(depth) if r.random() < 0.7 else self.fixed(["MY.N", "TARGET.N", "MY"])
        if kind == "attr":
            return self.attr_ref() if r.random() < 0.6 else self.fixed(
                ["MY.Requirements", "TARGET.Rank", "MY.A", "undefinedThing", "MY.N.a"]) \
                if r.random() < 0.7 else self.expr(d)
        if kind == "exprstr":
            saved, self.bare = self.bare, self.my
            e = self.expr(min(d, 2))
            self.bare = saved
            return quote(e)
        if kind == "ctxexpr":
            # The first argument of evalInEachContext/countMatches is an expression evaluated in
            # each ad; u, v, w are names no MY/TARGET ad defines (so that the matchmaking
            # bare-name fallback to TARGET, which the reference's eval does not do, never
            # matters).
            return self.pick(["u", "u + 1", "u > 1", "v", "w =?= undefined", "size(u)",
                              "isUndefined(w)", "u * 2.5", "strcat(u, v)", "MY.u", '"u"',
                              self.fixed(["MY.A"]), "w"])
        if kind == "adlist":
            ads = []
            for _ in range(r.randint(0, 3)):
                ads.append("[ u = %s; v = %s ]" % (self.pick(["1", "2", "3.5", '"s"', "undefined",
                                                              "error", "true", "{1,2}"]),
                                                   self.pick(["1", '"x"', "u + 1"])))
            if r.random() < 0.1:
                ads.append(self.literal())
            return "{" + ", ".join(ads) + "}"
        if kind == "envstr":
            return quote(self.pick(ENV_STRS))
        if kind == "argstr":
            return quote(self.pick(ARG_STRS))
        raise ValueError(kind)


def gen_ad(rng, names_pool, new_syntax, is_target):
    """A random ad (text) and the names it defines.

    Attribute values reference only attributes defined before them (by bare name or MY.) and,
    in MY, anything in TARGET (TARGET.); TARGET's values never use TARGET. (which points back
    into MY). So references never form a cycle. Values never are a bare MY/TARGET (an ad
    containing itself cannot be encoded)."""
    names = rng.sample(names_pool, rng.randint(2, 9))
    target_pool = [] if is_target else ["A", "B", "Cpus", "Memory", "S", "L", "N", "T", "Rt"]
    g = Gen(rng, [], target_pool, in_ad=True)
    attrs = []
    for i, nm in enumerate(names):
        earlier = names[:i]
        g.my, g.bare = earlier, earlier
        low = nm.lower()
        if low == "l":
            v = g.list_lit(2)
        elif low == "n":
            p = ["a + 1", "b", "c"] + (["MY.A"] if "A" in earlier else []) + \
                ([] if is_target else ["TARGET.A"])
            v = "[ a = %s; b = %s; p = %s ]" % (g.literal(), g.literal(), g.pick(p))
        elif low == "t":
            v = g.abstime()
        elif low == "rt":
            v = g.reltime()
        elif low == "s":
            v = g.string_lit()
        elif low == "requirements":
            v = g.pick(["true", "false"] + ([] if is_target else [
                "TARGET.Cpus >= 1", "TARGET.B =!= undefined", "TARGET.Memory > 1024"]))
        elif rng.random() < 0.6:
            v = g.literal()
        else:
            v = g.expr(2)
        attrs.append((nm, v))
    if new_syntax:
        return "[ " + "; ".join("%s = %s" % a for a in attrs) + " ]", names
    return "\n".join("%s = %s" % a for a in attrs) + "\n", names


def gen_case(rng):
    my_text, my_names = gen_ad(rng, ATTR_NAMES, rng.random() < 0.8, False)
    tg_text, tg_names = gen_ad(rng, ATTR_NAMES, rng.random() < 0.8, True)
    g = Gen(rng, my_names, tg_names)
    return {"expr": g.expr(rng.choice([1, 2, 2, 3, 3, 4])), "my": my_text, "target": tg_text}


# ---------------------------------------------------------------------------------------------
# The list and nested-ad corpus (`--corpus lists`)
# ---------------------------------------------------------------------------------------------
#
# libclassad keeps a list as its unevaluated element expressions (an ExprList) and a nested ad as
# the ad node itself, each remembering the ad it was written in; what an element evaluates to
# depends on who evaluates it and how: a subscript evaluates it in the ad it was written in,
# member()/sum()/join()/... in the scope of the call, a list copied out through `ad["name"]` has
# lost its scope. This corpus puts lists and nested ads whose elements refer to attributes (MY.,
# TARGET., bare names, PARENT.), call functions (some of which fail), subscript and select, into
# both ads, and uses them in every position: as the result, inside other lists and ads,
# subscripted, selected, and passed to the functions that take lists.
#
# References never form a cycle: each attribute has a level (scalars 0, the nested ad N 1, the
# list L 2, G 3, E 4, M 5) and refers, by any spelling, only to names of lower levels, which
# holds whichever ad a reference resolves in. A few lists deliberately contain themselves
# (libclassad's lists are lazy, so these are infinite lists, encoded to the depth limit).

LIST_SCALARS = ["A", "B", "C", "S", "X", "Y"]
LIST_LEVELS = {"N": 1, "L": 2, "G": 3, "E": 4, "M": 5}
LIST_NESTED = ["a", "b", "c"]
LIST_BAD_CALLS = ['replaceAll("(", %s, "X")', 'regexp("[", %s)', "nosuch(%s)",
                  'replace("a{", %s, "y")', "substr(%s, 1, 2, 3)", "%s / 0", "pow(%s)",
                  'regexps("(", %s, "\\\\1")']
LIST_CALLS = ["%s + 1", 'strcat(%s, "x")', "size(%s)", "isUndefined(%s)", "isError(%s)",
              "toUpper(%s)", "int(%s)", "%s =?= 1", "%s ?: 7", "string(%s)", "-%s",
              "ifThenElse(%s, 1, 2)", "%s * 2.5", "isList(%s)", "isClassAd(%s)", "real(%s)",
              "%s is undefined", "!%s", "%s == 1"]


class ListGen(Gen):
    """Generates the elements and uses of lists and nested ads (see the corpus comment)."""

    def __init__(self, rng, mine, other, level):
        Gen.__init__(self, rng, [], [])
        self.mine = mine      # {name: level} defined in the ad being written (or MY at the top)
        self.other = other    # {name: level} of the other ad (TARGET from here)
        self.level = level    # names of lower levels may be referred to
        self.parents = []     # names of enclosing nested-ad literals (innermost last)

    def names(self, pool, below=None):
        lim = self.level if below is None else below
        return [n for n, lv in pool.items() if lv < lim]

    def literal(self):
        # no hexadecimal or octal literals: the reference does not parse them in ads
        while True:
            lit = Gen.literal(self)
            if lit not in HEX_OCT_LITS:
                return lit

    def defining(self, name):
        """Whether `name` is being defined by an enclosing nested-ad literal: a reference to it
        from here would be a cycle (names are case-insensitive)."""
        return any(name.lower() in (n.lower() for n in names) for names in self.parents)

    def scalar_ref(self):
        r = self.r.random()
        ok = lambda ns: [n for n in ns if not self.defining(n)]
        mine = ok(self.names(self.mine, 1))
        other = self.names(self.other, 1)
        if r < 0.3 and mine:
            return "MY." + self.pick(mine)
        if r < 0.55 and other:
            return "TARGET." + self.pick(other)
        if r < 0.8 and ok(mine + LIST_SCALARS):
            return self.pick(ok(mine + LIST_SCALARS))  # bare: maybe only in the other ad
        if r < 0.9 and self.parents and ok(LIST_SCALARS + ["a", "b"]):
            return "PARENT." + self.pick(ok(LIST_SCALARS + ["a", "b"]))
        return self.pick(["MY.zz", "TARGET.zz", "zz", "MY.Missing"])

    def container_ref(self, decorate=0.4):
        """A reference to a list or nested ad of a lower level (None when there is none);
        with probability `decorate` one of its attributes or elements instead."""
        mine = [n for n in self.names(self.mine) if n not in LIST_SCALARS]
        other = [n for n in self.names(self.other) if n not in LIST_SCALARS]
        opts = []
        for n in mine:
            opts += ["MY." + n, n]
        for n in other:
            opts += ["TARGET." + n]
        if not opts:
            return None
        ref = self.pick(opts)
        name = ref.split(".")[-1]
        k = self.r.random()
        if name in ("N", "M") and k < decorate:
            return "%s.%s" % (ref, self.pick(LIST_NESTED))
        if name in ("L", "G", "E") and k < decorate:
            return "%s[%d]" % (ref, self.r.choice([0, 0, 1, 1, 2, 3]))
        if k < decorate + 0.1:
            scope = ref.split(".")[0] if "." in ref else "MY"
            return '%s["%s"]' % (scope, name)
        return ref

    def element(self, depth):
        r = self.r.random()
        if r < 0.15:
            return self.literal()
        if r < 0.45:
            return self.scalar_ref()
        if r < 0.62:
            return self.pick(LIST_CALLS) % self.paren(self.scalar_ref())
        if r < 0.68:
            return self.pick(LIST_BAD_CALLS) % self.scalar_ref()
        if r < 0.8:
            c = self.container_ref()
            if c:
                return c
            return self.scalar_ref()
        if depth > 0 and r < 0.9:
            return self.list_literal(depth - 1)
        if depth > 0:
            return self.ad_literal(depth - 1)
        return self.scalar_ref()

    def list_literal(self, depth, n=None):
        n = self.r.randint(0, 4) if n is None else n
        return "{" + ", ".join(self.element(depth) for _ in range(n)) + "}"

    def ad_literal(self, depth, names=None):
        names = names or self.r.sample(LIST_NESTED + ["A", "S"], self.r.randint(1, 3))
        parts = []
        for i, nm in enumerate(names):
            # bare names and MY. here see this ad first: only its earlier attributes are safe
            self.parents.append(names[i:])
            v = self.element(depth)
            self.parents.pop()
            if i > 0 and self.r.random() < 0.2:
                v = self.pick(names[:i])  # an earlier attribute of the same nested ad
            parts.append("%s = %s" % (nm, v))
        return "[" + "; ".join(parts) + "]"

    def ads_list(self, depth):
        """A list of nested ads (for evalInEachContext/countMatches and selections)."""
        items = []
        for _ in range(self.r.randint(0, 3)):
            if self.r.random() < 0.85:
                items.append(self.ad_literal(depth, self.r.sample(["u", "v", "a"],
                                                                   self.r.randint(1, 2))))
            else:
                items.append(self.element(depth))
        return "{" + ", ".join(items) + "}"


def list_ad_plan(rng):
    """Which attributes an ad of the list corpus defines: {name: level}."""
    names = {nm: 0 for nm in rng.sample(LIST_SCALARS, rng.randint(3, 6))}
    for nm, lv in sorted(LIST_LEVELS.items(), key=lambda x: x[1]):
        if nm in ("N", "L") or rng.random() < 0.5:
            names[nm] = lv
    return names


def list_ad(rng, names, other_names):
    """The text of an ad of the list corpus defining `names` (see list_ad_plan)."""
    attrs = []
    for nm, lv in sorted(names.items(), key=lambda x: (x[1], x[0])):
        if lv == 0:
            g = Gen(rng, [], [])
            k = rng.random()
            if nm == "S" or 0.8 <= k < 0.9:
                v = g.string_lit()
            elif k < 0.55:
                v = g.pick(INT_LITS[:10])
            elif k < 0.7:
                v = g.pick(REAL_LITS[:8])
            elif k < 0.8:
                v = g.pick(["true", "false"])
            else:
                v = g.pick(["undefined", "error"])
            attrs.append((nm, v))
            continue
        g = ListGen(rng, names, other_names, lv)
        if nm in ("N", "M"):
            v = g.ad_literal(1, rng.sample(LIST_NESTED + ["A"], rng.randint(2, 4)))
        elif nm == "E":
            v = g.ads_list(1)
        else:
            v = g.list_literal(1, rng.randint(1, 4))
            if rng.random() < 0.03:  # a list that contains itself
                v = v[:-1] + ", " + rng.choice([nm, "MY." + nm]) + "}"
        attrs.append((nm, v))
    rng.shuffle(attrs)
    if rng.random() < 0.8:
        return "[ " + "; ".join("%s = %s" % a for a in attrs) + " ]"
    return "\n".join("%s = %s" % a for a in attrs) + "\n"


LIST_CMP_OPS = ["<", "<=", "==", "!=", ">=", ">", "is", "isnt"]
LIST_CTX = ["u", "u + 1", "v", "a", "isUndefined(u)", "u =?= 1", "size(u)", "MY.u", "MY.A",
            "A", "TARGET.A", "u[0]", "u.a", "strcat(u, v)"]


def list_container(g, depth):
    """A list or nested ad: a reference to one of the ads' or a literal written here."""
    r = g.r.random()
    if r < 0.55:
        c = g.container_ref(0.1)
        if c:
            return c
    if r < 0.8:
        return g.list_literal(depth)
    if r < 0.92:
        return g.ad_literal(depth)
    return g.ads_list(depth)


def list_use(g, depth):
    """An expression using a list or nested ad in one of the positions they can take."""
    k = g.r.randrange(30)
    if 21 <= k < 23 and g.r.random() < 0.5:
        # inside a nested ad written here, whose a and b must not be referred to from within
        g.parents.append(["a", "b"])
        c, d = list_container(g, depth), list_container(g, depth)
        g.parents.pop()
        return g.pick(["[a = %s; b = %s]" % (c, d), "[a = %s].a" % c, '[a = %s]["a"]' % c,
                       "[a = %s; b = %s].b" % (c, d)])
    c = list_container(g, depth)
    p = g.paren(c)
    x = g.scalar_ref() if g.r.random() < 0.5 else g.literal()
    if k < 4:
        return c
    if k < 7:
        idx = g.pick(["0", "1", "2", "-1", "0", "1", "0", "1", '"a"', '"b"', '"A"', "A", "1.0",
                      "undefined"])
        e = "%s[%s]" % (p, idx)
        if g.r.random() < 0.25:
            e += "[%s]" % g.pick(["0", "1", '"a"', '"b"'])
        return e
    if k < 9:
        # never on a list or ad copied out by a subscript (`(X["L"]).a`): libclassad reads
        # freed memory there
        while c.endswith('"]'):
            c = list_container(g, depth)
        e = "%s.%s" % (g.paren(c), g.pick(LIST_NESTED + ["u", "A", "zz"]))
        return e + ("." + g.pick(LIST_NESTED)) if g.r.random() < 0.15 else e
    if k < 10:
        return "%s(%s)" % (g.pick(["size", "isList", "isClassAd", "isUndefined", "isError"]), c)
    if k < 12:
        return "%s(%s, %s)" % (g.pick(["member", "identicalMember"]), x, c)
    if k < 14:
        return "%s(%s)" % (g.pick(["sum", "avg", "min", "max"]), c)
    if k < 15:
        return '%s("%s", %s, %s)' % (g.pick(["anyCompare", "allCompare"]),
                                     g.pick(LIST_CMP_OPS), c, x)
    if k < 17:
        return g.pick(['join(",", @)', "join(@)", "strcat(@)", "string(@)", 'strcat("<", @, ">")',
                       "toUpper(@)", 'join(@, "x")', "size(string(@))",
                       'stringListMember("1", join(",", @))']).replace("@", c)
    if k < 19:
        d = list_container(g, depth)
        op = g.pick(["is", "isnt", "=?=", "=!=", "==", "!="])
        return "%s %s %s" % (p, op, g.paren(d))
    if k < 21:
        d = list_container(g, depth)
        cond = g.pick([x, "true", "false", "undefined", "A > 1", "MY.B", "TARGET.B"])
        return g.pick(["ifThenElse(%s, %s, %s)" % (cond, c, d),
                       "%s ? %s : %s" % (g.paren(cond), p, g.paren(d)),
                       "%s ?: %s" % (p, g.paren(d))])
    if k < 23:
        d = list_container(g, depth)
        return g.pick(["{%s, %s}" % (c, d), "{%s}[0]" % c, "{%s, %s}[1]" % (c, d)])
    if k < 25:
        lst = c if g.r.random() < 0.5 else g.ads_list(depth)
        return "%s(%s, %s)" % (g.pick(["evalInEachContext", "countMatches"]),
                               g.pick(LIST_CTX), lst)
    if k < 27:
        t = g.pick(["listToArgs(@)", "quantize(" + x + ", @)", 'regexpMember("a", @)',
                    "unparse(@)", "eval(string(@))", "debug(@)", 'split(string(@), "{,}")',
                    "isError(@[0])", "isUndefined(@[1])", "size(@) > 1", "@[size(@) - 1]"])
        return t.replace("@", p)
    if k < 28:
        return "%s(%s)" % (g.pick(["sum", "min", "max"]), g.list_literal(depth))
    return "%s.%s" % (g.paren(g.ads_list(depth)), g.pick(["u", "v", "a"]))


def gen_list_case(rng):
    my_names, tg_names = list_ad_plan(rng), list_ad_plan(rng)
    my_text = list_ad(rng, my_names, tg_names)
    tg_text = list_ad(rng, tg_names, my_names)
    g = ListGen(rng, my_names, tg_names, 9)
    return {"expr": list_use(g, rng.choice([1, 1, 2])), "my": my_text, "target": tg_text}


CORPORA = {"general": gen_case, "lists": gen_list_case}


def case_at(seed, i, corpus="general"):
    """Case number i of a seed; each case has its own random stream so that workers can
    generate disjoint ranges in parallel and a crash restarts at the next case."""
    return CORPORA[corpus](random.Random(seed * 1000003 + i))


def generate(seed, count, corpus="general"):
    return [case_at(seed, i, corpus) for i in range(count)]


# ---------------------------------------------------------------------------------------------
# Reference evaluation (runs in worker processes)
# ---------------------------------------------------------------------------------------------

_ca = None


def ref():
    global _ca
    if _ca is None:
        import warnings
        warnings.filterwarnings("ignore")
        import htcondor2  # noqa: F401  (registers the compat functions; must come first)
        import classad2
        _ca = classad2
    return _ca


def parse_ad_text(text):
    ca = ref()
    if text is None or text.strip() == "":
        return ca.ClassAd()
    if text.lstrip().startswith("["):
        return ca.ClassAd(text)
    return ca.parseOne(text, ca.ParserType.Old)


def encode_real(f):
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f


class EvalFailed(Exception):
    """ExprTree::Evaluate returned false (e.g. a circular reference)."""


def ref_eval(text, my, tg, simplify=False):
    ca = ref()
    tree = ca.ExprTree(text)
    try:
        return tree.simplify(my, tg) if simplify else tree.eval(my, tg)
    except ca.ClassAdException as e:
        if "failed to evaluate" in str(e):
            raise EvalFailed() from e
        raise


RESERVED = {"true", "false", "undefined", "error", "is", "isnt", "my", "target", "parent"}


def member(text, name):
    """`(text).name`, the expression of attribute `name` of the ad `text` evaluates to.

    Selection, not a subscript: libclassad's `ad["name"]` returns nested ads without their
    enclosing scope, so `.name` is what "evaluated in its ad" means. Names that are not plain
    identifiers fall back to `["name"]`."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name.lower() not in RESERVED:
        return "(%s).%s" % (text, name)
    return "(%s)[%s]" % (text, quote(name))


FAILED = {"type": "error", "value": None, "reference_failed": True}


def encode_part(text, my, tg, depth):
    """An attribute or element: one whose evaluation fails (Evaluate() returns false, e.g. a
    circular reference) is an error there, not a failure of the whole value."""
    try:
        return encode(text, my, tg, depth)
    except EvalFailed:
        return dict(FAILED)


def encode(text, my, tg, depth=0):
    """Evaluates `text` (an expression) in the match context and encodes the value.

    ClassAd and list values are never converted to Python objects: converting an ad that a
    function made (splitTime(...)) crashes the reference. Their attributes and elements are
    evaluated through `(E).name` and `(E)[i]` instead, which evaluates each in its own ad.
    """
    ca = ref()
    if ref_eval("isClassAd(%s)" % text, my, tg) is True:
        if depth >= ENCODE_DEPTH_LIMIT:
            return {"type": "classad", "value": "depth-limit"}
        keys = ca.ClassAd(ref_eval("string(%s)" % text, my, tg)).keys()
        return {"type": "classad",
                "value": {k: encode_part(member(text, k), my, tg, depth + 1) for k in keys}}
    if ref_eval("isList(%s)" % text, my, tg) is True:
        if depth >= ENCODE_DEPTH_LIMIT:
            return {"type": "list", "value": "depth-limit"}
        n = ref_eval("size(%s)" % text, my, tg)
        return {"type": "list",
                "value": [encode_part("(%s)[%d]" % (text, i), my, tg, depth + 1)
                          for i in range(n)]}
    v = ref_eval(text, my, tg)
    if v is ca.Value.Undefined:
        return {"type": "undefined", "value": None}
    if v is ca.Value.Error:
        return {"type": "error", "value": None}
    if isinstance(v, bool):
        return {"type": "boolean", "value": v}
    if isinstance(v, int):
        return {"type": "integer", "value": v}
    if isinstance(v, float):
        if str(ref_eval(text, my, tg, simplify=True)).lstrip().startswith("relTime("):
            return {"type": "reltime", "value": encode_real(v)}
        return {"type": "real", "value": encode_real(v)}
    if isinstance(v, str):
        return {"type": "string", "value": v}
    if hasattr(v, "timestamp"):  # datetime.datetime: an absolute time
        return {"type": "abstime", "value": int(v.timestamp())}
    raise TypeError("unexpected reference value %r" % (v,))


def eval_case(case):
    """The result fields for one {"expr","my","target"} case."""
    ca = ref()
    try:
        my = parse_ad_text(case.get("my"))
        tg = parse_ad_text(case.get("target"))
    except Exception as e:  # the ads are part of the case: say so
        return {"type": "ad_parse_error", "message": str(e)}
    try:
        ca.ExprTree(case["expr"])
    except Exception as e:
        return {"type": "parse_error", "message": str(e)}
    try:
        return encode(case["expr"], my, tg)
    except EvalFailed:
        # Evaluate() itself failed (circular reference): HTCondor treats that as error.
        return dict(FAILED)
    except Exception as e:
        return {"type": "reference_exception", "message": "%s: %s" % (type(e).__name__, e)}


def unparse_case(case):
    ca = ref()
    try:
        tree = ca.ExprTree(case["expr"])
        # repr is ClassAdUnParser's one-line form; str pretty-prints lists and ads on lines
        return {"unparse": repr(tree), "pretty": str(tree)}
    except Exception as e:
        return {"type": "parse_error", "message": str(e)}


def old_ads_case(case):
    ca = ref()
    try:
        ads = []
        for ad in ca.parseAds(case["text"], ca.ParserType.Old):
            ads.append({k: repr(ad.lookup(k)) for k in ad.keys()})
        return {"ads": ads}
    except Exception as e:
        return {"type": "parse_error", "message": str(e)}


MODES = {"eval": eval_case, "unparse": unparse_case, "old-ads": old_ads_case}


def worker_main(mode, source, start, end):
    """Evaluates cases start..end-1, one output line (case + result) per case. `source` is a
    JSON-lines file of cases, or "seed:S" ("lists:S") to generate case i of seed S of the
    general (list) corpus."""
    fn = MODES[mode]
    out = sys.stdout
    if source.startswith("seed:") or source.startswith("lists:"):
        corpus, seed = source.split(":")
        corpus = "general" if corpus == "seed" else corpus
        cases = (case_at(int(seed), i, corpus) for i in range(start, end))
    else:
        with open(source, encoding="utf-8") as f:
            cases = [json.loads(ln) for ln in f][start:end]
    for case in cases:
        row = dict(case)
        row.update(fn(case))
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()


# ---------------------------------------------------------------------------------------------
# Supervisor: runs workers, restarts them after a crash or a hang
# ---------------------------------------------------------------------------------------------

def supervise(mode, source, start, end, case_of):
    """Rows for cases start..end-1, evaluated by one worker process at a time; a case the
    reference crashed or hung on is recorded as such and the next worker starts after it."""
    rows = []
    env = dict(os.environ, TZ="UTC", PYTHONHASHSEED="0")
    while start + len(rows) < end:
        first = start + len(rows)
        p = subprocess.Popen([sys.executable, HERE, "--worker", mode, source, str(first), str(end)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        buf = b""
        dead = None
        while start + len(rows) < end:
            if not sel.select(CASE_TIMEOUT_SECS):
                dead = "reference_timeout"
                p.kill()
                break
            chunk = os.read(p.stdout.fileno(), 1 << 16)
            if not chunk:
                dead = "reference_crash"
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for ln in lines:
                rows.append(json.loads(ln))
        sel.close()
        p.stdout.close()
        p.wait()
        if dead and start + len(rows) < end:
            row = dict(case_of(start + len(rows)))
            row.update({"type": dead, "message": "the reference library %s" % (
                "crashed" if dead == "reference_crash" else "timed out")})
            rows.append(row)
    return rows


def run_parallel(mode, source, count, case_of, jobs):
    jobs = max(1, min(jobs, count // 200 + 1))
    bounds = [i * count // jobs for i in range(jobs + 1)]
    outs = [None] * jobs

    def run(i):
        outs[i] = supervise(mode, source, bounds[i], bounds[i + 1], case_of)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for o in outs for r in o]


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--corpus", choices=sorted(CORPORA), default="general",
                    help="general: random expressions; lists: lists and nested ads")
    ap.add_argument("--out")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--eval", action="store_true", help="evaluate cases from stdin")
    ap.add_argument("--unparse", action="store_true", help="unparse expressions from stdin")
    ap.add_argument("--old-ads", action="store_true", help="parse old-syntax ads from stdin")
    ap.add_argument("--no-eval", action="store_true", help="generate cases only")
    ap.add_argument("--worker", nargs=4, metavar=("MODE", "SOURCE", "START", "END"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker_main(a.worker[0], a.worker[1], int(a.worker[2]), int(a.worker[3]))
        return 0
    # A name of this process's own, so two generators writing the same cache file at once
    # (tests in separate processes) cannot remove each other's half-written file.
    tmp = "%s.%d.tmp" % (a.out, os.getpid()) if a.out else None
    out = open(tmp, "w", encoding="utf-8") if a.out else sys.stdout
    if a.no_eval:
        rows = generate(a.seed, a.count, a.corpus)
    elif a.eval or a.unparse or a.old_ads:
        mode = "unparse" if a.unparse else "old-ads" if a.old_ads else "eval"
        cases = [json.loads(ln) for ln in sys.stdin if ln.strip()]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False,
                                         encoding="utf-8") as f:
            for c in cases:
                f.write(json.dumps(c, ensure_ascii=False) + "\n")
        try:
            rows = run_parallel(mode, f.name, len(cases), lambda i: cases[i], a.jobs)
        finally:
            os.unlink(f.name)
    else:
        source = "%s:%d" % ("seed" if a.corpus == "general" else a.corpus, a.seed)
        rows = run_parallel("eval", source, a.count, lambda i: case_at(a.seed, i, a.corpus),
                            a.jobs)
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
    if a.out:
        out.close()
        os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
