"""The SDK's logic outside a component: argument rules, the run wrapper,
the failure messages and the shipped WIT copy."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lobster_step import Args, Failed, InvalidArgs, state  # noqa: E402
from lobster_step.api import StepDef, failure_message  # noqa: E402


class ArgsTest(unittest.TestCase):
    def test_greedy_rules_match_the_pipeline_language(self):
        a = Args(["pos1", "--apply", "--n", "5", "--s=--weird", "pos2", "--last", "--n", "6"])
        self.assertEqual(a.positional, ["pos1", "pos2"])
        self.assertEqual(a.flag("apply"), True)
        self.assertEqual(a.number("n"), 6)
        self.assertEqual(a.str("s"), "--weird")
        self.assertTrue(a.switch("last"))
        self.assertIsNone(a.flag("missing"))

    def test_a_bad_number_is_invalid_args(self):
        with self.assertRaises(InvalidArgs) as e:
            Args(["--n", "ten"]).number("n")
        self.assertIn("--n must be a number", e.exception.message)


class CallTest(unittest.TestCase):
    def test_items_in_and_out_as_json(self):
        d = StepDef("x", "0.1.0", "s", run=lambda args, items: [{"n": len(items), "k": args.str("k")}])
        self.assertEqual(d.call(["--k", "v"], '[1,2]'), '[{"n":2,"k":"v"}]')
        self.assertEqual(d.call([], '{"one":1}'), '[{"n":1,"k":null}]')

    def test_bad_input_is_invalid_args(self):
        d = StepDef("x", "0.1.0", "s", run=lambda args, items: items)
        with self.assertRaises(InvalidArgs):
            d.call([], "not json")

    def test_failure_message_names_type_and_place(self):
        try:
            {}["missing"]
        except KeyError as e:
            msg = failure_message(e)
        self.assertTrue(msg.startswith("KeyError: 'missing' (at test_api.py:"), msg)

    def test_state_outside_a_component_is_local(self):
        state.set("k", {"a": [1]})
        self.assertEqual(state.get("k"), {"a": [1]})
        self.assertIsNone(state.get("nope"))


class WitTest(unittest.TestCase):
    def test_the_shipped_world_is_the_repository_world(self):
        here = os.path.dirname(__file__)
        with open(os.path.join(here, "../lobster_step/wit/step.wit")) as a, open(
            os.path.join(here, "../../../wit/step.wit")
        ) as b:
            self.assertEqual(a.read(), b.read(), "copy wit/step.wit into guest-sdk/python/lobster_step/wit/")


if __name__ == "__main__":
    unittest.main()
