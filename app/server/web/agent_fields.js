// The agent settings a replay or a fork may change (model, system prompt, tools, most steps,
// temperature, most tokens a reply), filled with what a session ran with, to be edited rather than
// written afresh. Only what the user changed is sent: the values shown are not overrides.

import { api } from "./api.js";
import { el } from "./dom.js";

export function field(id, label, input, help) {
  return el("div", { class: "field" }, el("label", { for: id }, label), input,
    help ? el("p", { class: "muted small", id: `${id}-help` }, help) : null);
}

/** The inputs (ids prefixed ``prefix``), laid out by the caller with ``field``; ``model``:
 * offer the model too (a fork runs live: a replay answers from the recording). */
export function agentFields(prefix, { model = false } = {}) {
  const id = (name) => `${prefix}-${name}`;
  const inputs = {
    model: model ? el("input", { id: id("model"), name: "model", type: "text", autocomplete: "off", placeholder: "the session's model" }) : null,
    prompt: el("textarea", { id: id("prompt"), name: "system_prompt", rows: 8, "aria-describedby": `${id("prompt")}-help`,
      placeholder: "Empty: the session's system prompt" }),
    tools: el("input", { id: id("tools"), name: "tools", type: "text", autocomplete: "off", "aria-describedby": `${id("tools")}-help`,
      placeholder: "e.g. execute_bash, finish" }),
    iterations: el("input", { id: id("iterations"), name: "max_iterations", type: "number", min: 1, step: 1, placeholder: "the session's" }),
    temperature: el("input", { id: id("temperature"), name: "temperature", type: "number", min: 0, max: 2, step: "any", placeholder: "the session's" }),
    maxTokens: el("input", { id: id("max-tokens"), name: "max_tokens", type: "number", min: 1, step: 1, placeholder: "the session's" }),
  };
  const shown = { model: "", prompt: "", tools: "", iterations: "", temperature: "", maxTokens: "" };

  return {
    inputs,
    /** The prompt and tools (help text says what a change does). */
    agentRows: () => [
      inputs.model ? field(id("model"), "Model", inputs.model) : null,
      field(id("prompt"), "System prompt", inputs.prompt, "The session's, to edit; a changed one replaces it ({workspace} is filled in)."),
      field(id("tools"), "Tools", inputs.tools, "The tools the model is offered, by name, separated by commas."),
    ],
    /** Temperature and the most tokens a reply. */
    paramRows: () => [
      field(id("temperature"), "Temperature", inputs.temperature),
      field(id("max-tokens"), "Most tokens a reply", inputs.maxTokens),
    ],
    /** Most steps (model calls). */
    stepsRow: () => field(id("iterations"), "Most steps", inputs.iterations),
    /** Fills the inputs with what ``session`` ran with; ``isClosed()``: the form is gone. */
    fill: (session, isClosed = () => false) => ranWith(session).then((values) => {
      if (isClosed()) return;
      for (const [key, value] of Object.entries(values)) {
        const input = inputs[key];
        if (!input || value === undefined || value === null || value === "" || input.value) continue;
        input.value = String(value);
        shown[key] = input.value;
      }
    }),
    /** The model typed in, when it is not the one shown (null: keep the session's). */
    model: () => {
      const value = inputs.model?.value.trim() || "";
      return value && value !== shown.model ? value : null;
    },
    /** The ``overrides`` of the request: only the inputs changed from what was shown. */
    overrides: () => {
      const overrides = {};
      const changed = (key) => inputs[key].value.trim() !== "" && inputs[key].value !== shown[key];
      if (changed("prompt")) overrides.system_prompt = inputs.prompt.value;
      const names = inputs.tools.value.split(",").map((t) => t.trim()).filter(Boolean);
      if (names.length && names.join(", ") !== shown.tools) overrides.tools = names;
      if (changed("iterations")) overrides.max_iterations = Number(inputs.iterations.value);
      const params = {};
      if (changed("temperature")) params.temperature = Number(inputs.temperature.value);
      if (changed("maxTokens")) params.max_tokens = Number(inputs.maxTokens.value);
      if (Object.keys(params).length) overrides.model_params = params;
      return overrides;
    },
  };
}

/** What ``session`` ran with: its recorded configuration (a replay's or a fork's overrides
 * first), its first model call's system prompt and tools where the overrides name none. */
async function ranWith(session) {
  const page = await api(`/api/sessions/${session}/events?after_seq=0&limit=200`);
  const created = page.events.find((e) => e.kind === "session.created");
  const config = created?.payload.config || {};
  const changes = config.agent_config || {};
  const params = changes.model_params || {};
  const values = {
    model: config.model,
    prompt: changes.system_prompt,
    tools: (changes.tools || config.tools || []).join(", "),
    iterations: changes.max_iterations ?? config.max_iterations,
    temperature: params.temperature ?? config.llm?.temperature,
    maxTokens: params.max_tokens ?? config.llm?.max_output_tokens,
  };
  const first = page.events.find((e) => e.kind === "llm.call");
  if (first && !values.prompt) {
    const call = await api(`/api/sessions/${session}/model-calls/${first.seq}`);
    const system = (call.messages || []).find((m) => m.role === "system");
    if (system && typeof system.content === "string") values.prompt = system.content;
    const names = (call.tools || []).map((t) => (t.function || t).name).filter(Boolean);
    if (names.length && !changes.tools) values.tools = names.join(", ");
  }
  return values;
}
