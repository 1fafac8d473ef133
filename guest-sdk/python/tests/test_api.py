"""The SDK's logic outside a component: argument rules, the run wrapper,
the failure messages and the shipped WIT copy."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import json  # noqa: E402

from lobster_step import Args, Failed, InvalidArgs, llm, llm_calls, state, tool, tools  # noqa: E402
from lobster_step import _host  # noqa: E402
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


class BrokerTest(unittest.TestCase):
    def tearDown(self):
        _host.set_broker_for_tests(None)

    def test_tools_and_llm_go_through_the_broker_as_json(self):
        seen = []

        class Stand:
            def invoke_tool(self, tool, action, args_json):
                seen.append((tool, action, json.loads(args_json)))
                return '[{"ok":true}]'

            def llm_json(self, request_json):
                seen.append(json.loads(request_json))
                return '{"intent":"x"}'

        _host.set_broker_for_tests(Stand())
        self.assertEqual(tools.invoke("echo", {"to": "x"}), [{"ok": True}])
        self.assertEqual(llm.ask("Classify", {"s": 1}, {"type": "object"}), {"intent": "x"})
        self.assertEqual(seen[0], ("echo", "json", {"to": "x"}))
        self.assertEqual(seen[1], {"prompt": "Classify", "input": {"s": 1}, "schema": {"type": "object"}})

    def test_a_refused_call_is_failed_with_the_reason(self):
        class Refuse:
            def invoke_tool(self, *a):
                raise Exception("refused: not granted")

            def llm_json(self, *a):
                raise Exception("refused: no --allow-llm")

        _host.set_broker_for_tests(Refuse())
        with self.assertRaises(Failed) as e:
            tools.invoke("echo")
        self.assertEqual(e.exception.message, "refused: not granted")
        with self.assertRaises(Failed) as e:
            llm.ask("p")
        self.assertEqual(e.exception.message, "refused: no --allow-llm")
        _host.set_broker_for_tests(None)
        with self.assertRaises(Failed) as e:
            tools.invoke("echo")
        self.assertIn("no broker outside a component", e.exception.message)

    def test_tool_and_llm_capabilities(self):
        self.assertEqual((tool("echo").kind, tool("echo").name), ("tool", "echo"))
        self.assertEqual(llm_calls().kind, "llm")


class WitTest(unittest.TestCase):
    def test_the_shipped_world_is_the_repository_world(self):
        here = os.path.dirname(__file__)
        with open(os.path.join(here, "../lobster_step/wit/step.wit")) as a, open(
            os.path.join(here, "../../../wit/v0.2/step.wit")
        ) as b:
            self.assertEqual(a.read(), b.read(), "copy wit/v0.2/step.wit into guest-sdk/python/lobster_step/wit/")


if __name__ == "__main__":
    unittest.main()
