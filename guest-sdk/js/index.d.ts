// Types for the `lobster-step` SDK and the `lobster:step@0.2.0` world it wraps.

/** A JSON value as items carry them. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The type of a flag's value (WIT `flag-kind`). */
export type FlagKind = "switch" | "text" | "number";

/** One flag the step accepts (WIT `flag-spec`, before mapping). */
export interface FlagSpec {
  name: string;
  kind: FlagKind;
  description: string;
  default: string | null;
}

export declare const Flag: {
  switch(name: string, description: string): FlagSpec;
  text(name: string, description: string, dflt?: string | null): FlagSpec;
  number(name: string, description: string, dflt?: number | null): FlagSpec;
};

/** A capability the step needs (WIT `capability`). */
export type Capability =
  | { kind: "dir"; name: string; access: "read" | "read-write" }
  | { kind: "env"; name: string }
  | { kind: "tool"; name: string }
  | { kind: "llm"; name: "" };

export declare function readDir(guestPath: string): Capability;
export declare function writeDir(guestPath: string): Capability;
export declare function env(name: string): Capability;
/** Calls to gateway tool `name` (granted by `--allow-tool NAME`). */
export declare function tool(name: string): Capability;
/** Model calls (granted by `--allow-llm`). */
export declare function llmCalls(): Capability;

/** Gateway tools through the host's broker; a refusal throws `Failed`. */
export declare const tools: {
  invoke<T = Json>(name: string, args?: { [key: string]: Json }, action?: string | null): T[];
};

/** A model request (WIT `broker.llm-json`). */
export interface LlmRequest {
  prompt: string;
  input?: Json;
  schema?: Json;
  model?: string;
  temperature?: number;
  "max-tokens"?: number;
}

/** Model calls through the host's broker; a refusal throws `Failed`. */
export declare const llm: {
  json<T = Json>(request: LlmRequest): T;
  ask<T = Json>(prompt: string, input?: Json, schema?: Json): T;
};

/** The stage's arguments, parsed with the pipeline language's greedy rules. */
export declare class Args {
  constructor(tokens: string[]);
  readonly positional: string[];
  readonly flags: Map<string, string | true>;
  flag(name: string): string | true | null;
  str(name: string): string | null;
  str(name: string, dflt: string): string;
  switch(name: string): boolean;
  number(name: string): number | null;
  number(name: string, dflt: number): number;
}

/** Throw to fail with WIT `step-error.invalid-args`. */
export declare class InvalidArgs extends Error {}
/** Throw to fail with WIT `step-error.failed`; any other exception maps to it too. */
export declare class Failed extends Error {}

export interface StepDefinition<I = any, O = Json> {
  name: string;
  version?: string;
  summary?: string;
  flags?: FlagSpec[];
  capabilities?: Capability[];
  run(args: Args, items: I[]): O[] | Iterable<O> | O | void;
}

export interface Step<I = any, O = Json> extends Required<StepDefinition<I, O>> {}

/** Declare the module's step; export it as the module's default. */
export declare function defineStep<I = any, O = Json>(def: StepDefinition<I, O>): Step<I, O>;

/** Log lines go to the host's log, tagged with the step's name (`console.*` too). */
export declare const log: {
  trace(message: unknown): void;
  debug(message: unknown): void;
  info(message: unknown): void;
  warn(message: unknown): void;
  error(message: unknown): void;
};

/** Durable JSON values scoped to this step and the current run. */
export declare const state: {
  get<T = Json>(key: string): T | null;
  set(key: string, value: Json): void;
};

/** WIT `step-info`, as `describe` returns it. */
export interface StepInfo {
  name: string;
  version: string;
  summary: string;
  flags: { name: string; kind: FlagKind; defaultValue: string | null; description: string }[];
  capabilities: (
    | { tag: "dir"; val: [string, "read" | "read-write"] }
    | { tag: "env"; val: string }
    | { tag: "tool"; val: string }
    | { tag: "llm" }
  )[];
}

/** WIT `step-error`, as `run` throws it. */
export type StepError = { tag: "invalid-args"; val: string } | { tag: "failed"; val: string };

export declare function describeOf(step: Step): StepInfo;
export declare function callStep(step: Step, argv: string[], input: string): string;
export declare function exportsFor(step: Step): {
  describe(): StepInfo;
  run(args: string[], input: string): string;
};
export declare function failureMessage(e: unknown): string;
