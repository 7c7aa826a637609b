// The playground (#/sessions/ID/calls/SEQ/playground): one recorded model call's exact
// request to edit (each prompt message's role and text, messages added or removed, the tools
// as JSON, the parameters, the model) and send again; the new response beside the original
// one, the run recorded as a session of its own. The session page lists the runs made from
// its calls (playgroundRunsSection).

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { UNKNOWN_COST, duration, localTime } from "./format.js";
import { prettyArguments, usageText } from "./timeline.js";

const ROLES = ["system", "developer", "user", "assistant", "tool"];
// Recorded parameters that are the gateway's, not the request's (app/external/playground.py).
const GATEWAY_PARAMS = ["base_url", "stream", "stream_options"];

/** A recorded call's parameters as a request gives them (editable_params on the server). */
function editableParams(recorded) {
  const params = { ...(recorded || {}) };
  for (const key of GATEWAY_PARAMS) delete params[key];
  const extra = params.extra_body;
  if (extra && typeof extra === "object" && !Array.isArray(extra)) {
    delete params.extra_body;
    for (const [key, value] of Object.entries(extra)) if (!(key in params)) params[key] = value;
  }
  return params;
}

/** What is wrong with the tools' JSON text, or null; the tools otherwise. */
function readTools(text) {
  let tools;
  try {
    tools = JSON.parse(text || "[]");
  } catch (error) {
    return { error: `Not JSON: ${error.message}` };
  }
  if (!Array.isArray(tools)) return { error: "The tools must be a JSON list ([] for none)." };
  const bad = tools.findIndex((t) => !t || typeof t !== "object" || t.type !== "function" ||
    !t.function || typeof t.function.name !== "string" || !t.function.name);
  if (bad >= 0) return { error: `Tool ${bad}: each tool is {"type": "function", "function": {"name": ..., "parameters": {...}}}.` };
  return { value: tools };
}

/** What is wrong with the other parameters' JSON text, or null; the object otherwise. */
function readParams(text) {
  let params;
  try {
    params = JSON.parse(text || "{}");
  } catch (error) {
    return { error: `Not JSON: ${error.message}` };
  }
  if (!params || typeof params !== "object" || Array.isArray(params)) return { error: "The parameters must be a JSON object ({} for none)." };
  return { value: params };
}

function field(id, label, input, help) {
  return el("div", { class: "field" }, el("label", { for: id }, label), input,
    help ? el("p", { class: "muted small", id: `${id}-help` }, help) : null);
}

/** A field's error, said at the field (and to screen readers); null clears it. */
function fieldError(input, slot, message) {
  slot.textContent = message || "";
  slot.hidden = !message;
  if (message) input.setAttribute("aria-invalid", "true");
  else input.removeAttribute("aria-invalid");
}

/** One prompt message's editor: its role and text; what else it carries is kept as recorded. */
function messageEditor(message, onRemove) {
  const node = el("li", { class: "pg-message" });
  const { role, content, ...rest } = message;
  const asJson = content !== null && content !== undefined && typeof content !== "string";
  const roles = ROLES.includes(role) ? ROLES : [...ROLES, role];
  const roleSelect = el("select", { name: "role" }, roles.map((r) => el("option", { value: r, selected: r === role }, r)));
  const text = el("textarea", { name: "content", rows: 3, class: asJson ? "json" : "" },
    asJson ? JSON.stringify(content, null, 2) : (content ?? ""));
  const error = el("p", { class: "error small", role: "alert", hidden: true });
  const remove = el("button", { type: "button", class: "secondary small-button" }, "Remove");
  const kept = Object.keys(rest);
  node.append(
    el("div", { class: "pg-message-head" }, el("label", { class: "pg-role" }, el("span", { class: "pg-index" }), roleSelect), remove),
    el("label", { class: "visually-hidden pg-text-label" }), text, error);
  if (kept.length) node.append(el("p", { class: "muted small" }, `Also sent as recorded: ${kept.join(", ")}`));
  remove.addEventListener("click", () => onRemove(node));
  const fit = () => { text.rows = Math.min(14, Math.max(2, text.value.split("\n").length + 1)); };
  text.addEventListener("input", fit);
  fit();
  return {
    node,
    /** The numbers and labels, after messages were added or removed. */
    number(index) {
      const id = `pg-message-${index}`;
      text.id = id;
      node.querySelector(".pg-index").textContent = `Message ${index} role `;
      node.querySelector(".pg-text-label").setAttribute("for", id);
      node.querySelector(".pg-text-label").textContent = `Text of message ${index}`;
      roleSelect.setAttribute("aria-label", `Role of message ${index}`);
      remove.setAttribute("aria-label", `Remove message ${index}`);
    },
    /** The message as sent, or null (its error shown at it) when its JSON content is not JSON. */
    read() {
      let value = text.value;
      if (asJson) {
        try {
          value = JSON.parse(text.value);
        } catch (parseError) {
          fieldError(text, error, `Not JSON: ${parseError.message}`);
          return null;
        }
      } else if (value === "" && (content === null || content === undefined)) value = content ?? null;
      fieldError(text, error, null);
      return { role: roleSelect.value, content: value, ...rest };
    },
    focus() { text.focus(); },
  };
}

/** One call's cost as the timeline writes it: six decimals, or unknown (no price). */
function callCost(usd) {
  return usd === null || usd === undefined ? UNKNOWN_COST : `$${Number(usd).toFixed(6)}`;
}

/** One side of the comparison: a call's response, tool calls, tokens, cost and latency. */
function answer(call, heading, link) {
  const response = call.response || {};
  const usage = call.usage || {};
  const calls = response.tool_calls || [];
  const facts = [
    ["Model", call.model],
    ["Tokens", usageText(usage)],
    ["Cost", callCost(call.cost_usd)],
    ["Latency", duration(call.latency_ms)],
    ["Finish reason", response.finish_reason],
  ].filter(([, v]) => v !== null && v !== undefined && v !== "");
  return el("section", { class: `side pg-answer${call.error ? " failed" : ""}`, "aria-label": heading },
    el("h2", {}, heading), link,
    call.error ? el("p", { class: "error", role: "alert" }, `The model call failed${call.error_kind ? ` (${call.error_kind})` : ""}: ${call.error}`) : null,
    el("dl", { class: "facts" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    el("h3", {}, "Response"),
    response.content ? el("pre", { class: "response" }, response.content) : el("p", { class: "muted" }, "No text."),
    calls.length ? el("h3", {}, "Tool calls") : null,
    calls.length ? el("ul", { class: "tool-calls" }, calls.map((c) => el("li", {}, el("code", {}, c.name), " ",
      el("pre", { class: "json" }, prettyArguments(c.arguments ?? ""))))) : null);
}

/** A list of playground runs (GET /api/sessions/ID/playground-runs), newest first. */
function runList(runs, withCall) {
  return el("ul", { class: "pg-runs" }, runs.map((run) => el("li", {},
    el("a", { href: `#/sessions/${run.session_id}` }, run.session_id.slice(0, 8)),
    withCall ? [" · from ", el("a", { href: `#/sessions/${run.from_call.session}/calls/${run.from_call.seq}/playground` }, `call #${run.from_call.seq}`)] : null,
    ` · ${run.model || "?"} · ${localTime(run.created_at)} · `,
    run.error ? el("span", { class: "error" }, `failed: ${run.error_kind || "error"}`) : callCost(run.cost_usd),
    el("span", { class: "muted" }, ` · ${(run.from_call.changes || []).join("; ") || "sent again as recorded"}`))));
}

/** The session page's list of the playground runs made from its calls (hidden when none). */
export function playgroundRunsSection(sessionId) {
  const section = el("section", { class: "pg-runs-section", "aria-labelledby": "pg-runs-title", hidden: true },
    el("h2", { id: "pg-runs-title" }, "Playground runs of this session's calls"));
  api(`/api/sessions/${sessionId}/playground-runs`).then(({ runs }) => {
    if (!runs.length) return;
    section.append(runList(runs, true));
    section.hidden = false;
  }).catch(() => {}); // the session page works without it
  return section;
}

/** The playground of one model call. */
export function playgroundView({ main, showError, clearError }, sessionId, seq) {
  const crumbs = el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/" }, "Sessions"), " / ",
    el("a", { href: `#/sessions/${sessionId}` }, sessionId.slice(0, 8)), ` / call #${seq} / playground`);
  const status = el("p", { class: "muted", role: "status" }, "Loading the call's exact request…");
  clear(main).append(crumbs, el("h1", { id: "pg-title" }, `Playground: model call #${seq}`), status);
  let closed = false;
  api(`/api/sessions/${sessionId}/model-calls/${seq}`)
    .then((call) => { if (!closed) show(call); })
    .catch((error) => {
      if (closed) return;
      status.className = "error";
      status.setAttribute("role", "alert");
      status.textContent = `The call could not be loaded: ${error.message}`;
    });
  return () => { closed = true; };

  function show(call) {
    const params = editableParams(call.params);
    const { temperature: recordedTemperature, max_tokens: recordedMax, ...otherParams } = params;
    const model = el("input", { id: "pg-model", name: "model", type: "text", autocomplete: "off", value: call.model,
      "aria-describedby": "pg-model-help" });
    const editors = [];
    const list = el("ol", { class: "pg-messages", start: 0 });
    const renumber = () => editors.forEach((editor, index) => editor.number(index));
    const add = (message) => {
      const editor = messageEditor(message, (node) => {
        const at = editors.findIndex((e) => e.node === node);
        editors.splice(at, 1);
        node.remove();
        renumber();
      });
      editors.push(editor);
      list.append(editor.node);
      renumber();
      return editor;
    };
    (call.messages || []).forEach(add);
    const addButton = el("button", { type: "button", class: "secondary" }, "Add a message");
    addButton.addEventListener("click", () => add({ role: "user", content: "" }).focus());

    const toolsText = JSON.stringify(call.tools || [], null, 2);
    const tools = el("textarea", { id: "pg-tools", name: "tools", class: "json", rows: Math.min(14, toolsText.split("\n").length + 1),
      "aria-describedby": "pg-tools-help pg-tools-error" }, toolsText);
    const toolsError = el("p", { class: "error small", id: "pg-tools-error", role: "alert", hidden: true });
    const temperature = el("input", { id: "pg-temperature", name: "temperature", type: "number", min: 0, max: 2, step: "any",
      value: recordedTemperature ?? "" });
    const maxTokens = el("input", { id: "pg-max-tokens", name: "max_tokens", type: "number", min: 1, step: 1, value: recordedMax ?? "" });
    const otherText = JSON.stringify(otherParams, null, 2);
    const other = el("textarea", { id: "pg-params", name: "params", class: "json", rows: Math.min(8, otherText.split("\n").length + 1),
      "aria-describedby": "pg-params-help pg-params-error" }, otherText);
    const otherError = el("p", { class: "error small", id: "pg-params-error", role: "alert", hidden: true });
    const checkTools = () => fieldError(tools, toolsError, readTools(tools.value).error);
    const checkOther = () => fieldError(other, otherError, readParams(other.value).error);
    tools.addEventListener("input", checkTools);
    other.addEventListener("input", checkOther);

    const send = el("button", { type: "submit" }, "Send");
    const sendStatus = el("span", { class: "muted small", role: "status", "aria-live": "polite" });
    const form = el("form", { class: "card playground-form", "aria-labelledby": "pg-title" },
      el("p", {}, "Edit this model call's exact request and send it again. The answer is recorded as a small session of its own, linked to this call, and shown beside the original one."),
      field("pg-model", "Model", model, "The call's own model by default; any model name the server can call (litellm's provider/name)."),
      el("fieldset", { class: "pg-prompt" }, el("legend", {}, `Prompt messages`), list, el("div", { class: "actions" }, addButton)),
      el("div", { class: "field" }, el("label", { for: "pg-tools" }, "Tools offered (JSON)"), tools,
        el("p", { class: "muted small", id: "pg-tools-help" }, "A list of OpenAI function tools; [] offers none."), toolsError),
      el("fieldset", {}, el("legend", {}, "Parameters"),
        field("pg-temperature", "Temperature", temperature), field("pg-max-tokens", "Max tokens", maxTokens),
        el("div", { class: "field wide" }, el("label", { for: "pg-params" }, "Other parameters (JSON)"), other,
          el("p", { class: "muted small", id: "pg-params-help" }, "Any other chat-completion parameter, e.g. {\"top_p\": 0.9, \"seed\": 7}."), otherError)),
      el("div", { class: "actions" }, send, sendStatus));
    const results = el("section", { class: "pg-results", "aria-labelledby": "pg-results-title", hidden: true },
      el("h2", { id: "pg-results-title" }, "The original response and the new one"));
    const earlier = el("section", { class: "pg-runs-section", "aria-labelledby": "pg-earlier-title", hidden: true },
      el("h2", { id: "pg-earlier-title" }, "Runs of this call"));
    status.replaceWith(form, results, earlier);
    showRuns();

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearError();
      const messages = editors.map((editor) => editor.read());
      const toolsRead = readTools(tools.value);
      const otherRead = readParams(other.value);
      checkTools();
      checkOther();
      const broken = messages.indexOf(null);
      if (broken >= 0) return editors[broken].focus();
      if (toolsRead.error) return tools.focus();
      if (otherRead.error) return other.focus();
      if (!messages.length) {
        sendStatus.textContent = "Add a message first: a prompt needs one.";
        return;
      }
      const sentParams = { ...otherRead.value };
      if (temperature.value !== "") sentParams.temperature = Number(temperature.value);
      if (maxTokens.value !== "") sentParams.max_tokens = Number(maxTokens.value);
      const body = {
        messages,
        // what was not touched is the call's own (sent as null: the server keeps it)
        tools: tools.value === toolsText ? null : toolsRead.value,
        params: JSON.stringify(sentParams) === JSON.stringify(params) ? null : sentParams,
        model: model.value.trim() && model.value.trim() !== call.model ? model.value.trim() : null,
      };
      send.disabled = true;
      sendStatus.textContent = "Sending…";
      try {
        const run = await api(`/api/sessions/${sessionId}/model-calls/${seq}/playground`, { method: "POST", body });
        sendStatus.textContent = run.error ? "Sent: the model call failed (recorded)." : "Sent.";
        showResult(call, run);
        showRuns();
      } catch (error) {
        sendStatus.textContent = "";
        showError(error);
      } finally {
        send.disabled = false;
      }
    });

    function showResult(original, run) {
      const changes = run.from_call.changes || [];
      results.replaceChildren(
        el("h2", { id: "pg-results-title" }, "The original response and the new one"),
        el("p", { class: "small pg-changes" }, el("strong", {}, "Changed: "), changes.length ? changes.join("; ") : "nothing (sent again as recorded)"),
        el("div", { class: "compare" },
          answer(original, `Original · call #${seq}`, el("p", { class: "muted small" }, el("a", { href: `#/sessions/${sessionId}` }, `session ${sessionId.slice(0, 8)}`))),
          answer(run, "Playground", el("p", { class: "small" }, el("a", { href: `#/sessions/${run.session_id}`, class: "pg-new-session" }, `Open the new session ${run.session_id.slice(0, 8)}`)))));
      results.hidden = false;
      results.scrollIntoView({ block: "start" });
    }

    function showRuns() {
      api(`/api/sessions/${sessionId}/playground-runs?seq=${seq}`).then(({ runs }) => {
        if (closed || !runs.length) return;
        earlier.replaceChildren(el("h2", { id: "pg-earlier-title" }, `Runs of this call (${runs.length})`), runList(runs, false));
        earlier.hidden = false;
      }).catch(() => {});
    }
  }
}
