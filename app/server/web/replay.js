// Replays: run a recorded session again with another agent configuration (system prompt,
// tools, limits) without calling the model, then step through the recording and the replay
// side by side, model call by model call, the first divergence highlighted with its diff;
// "Fork here" starts a live session from any step of either side.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { diffView } from "./timeline.js";
import { allEvents, sideBySide } from "./side_by_side.js";

const POLL_MS = 1000;

function field(id, label, input, help) {
  return el("div", { class: "field" }, el("label", { for: id }, label), input,
    help ? el("p", { class: "muted small", id: `${id}-help` }, help) : null);
}

/** The replay form of one recorded session (#/replays/ID). */
export function replayFormView({ main, showError, clearError, go }, source) {
  const prompt = el("textarea", { id: "r-prompt", name: "system_prompt", rows: 8, "aria-describedby": "r-prompt-help",
    placeholder: "Empty: the recorded system prompt" });
  const tools = el("input", { id: "r-tools", name: "tools", type: "text", autocomplete: "off", "aria-describedby": "r-tools-help",
    placeholder: "e.g. execute_bash, finish" });
  const iterations = el("input", { id: "r-iterations", name: "max_iterations", type: "number", min: 1, step: 1 });
  const mode = el("select", { id: "r-mode", name: "mode" },
    el("option", { value: "strict" }, "strict: stop at the first difference"),
    el("option", { value: "positional" }, "positional: serve the Nth reply whatever was asked"));
  const submit = el("button", { type: "submit" }, "Run the replay");
  const recorded = { prompt: null, tools: [] }; // what the form was filled with
  const form = el("form", { class: "card", "aria-labelledby": "replay-title" },
    el("h1", { id: "replay-title" }, "Replay"),
    el("p", {}, "Run this recorded session again with another agent configuration. The recorded model replies and command results answer the agent, so nothing calls a model or runs a command; the first step where the agent behaves differently is shown with its diff."),
    el("p", { class: "muted small" }, "Recording ", el("a", { href: `#/sessions/${source}` }, source)),
    field("r-prompt", "System prompt", prompt, "The recording's, to edit; a changed one replaces it ({workspace} is filled in)."),
    field("r-tools", "Tools", tools, "The tools the model is offered, by name, separated by commas."),
    el("fieldset", {}, el("legend", {}, "Limits and mode"),
      field("r-iterations", "Most steps", iterations), field("r-mode", "Mode", mode)),
    submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    const overrides = {};
    // only what was changed: the recorded values shown in the form are not overrides
    if (prompt.value.trim() && prompt.value !== recorded.prompt) overrides.system_prompt = prompt.value;
    const names = tools.value.split(",").map((t) => t.trim()).filter(Boolean);
    if (names.length && names.join(",") !== recorded.tools.join(",")) overrides.tools = names;
    if (iterations.value) overrides.max_iterations = Number(iterations.value);
    const body = { mode: mode.value, overrides };
    submit.disabled = true;
    submit.textContent = "Replaying…";
    try {
      const made = await api(`/api/sessions/${source}/replays`, { method: "POST", body });
      const replay = made.id;
      go(`/replays/${source}/${replay}`);
    } catch (error) {
      showError(error);
      submit.disabled = false;
      submit.textContent = "Run the replay";
    }
  });
  clear(main).append(
    el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/" }, "Sessions"), " / ",
      el("a", { href: `#/sessions/${source}` }, source.slice(0, 8)), " / replay"),
    form);
  prompt.focus();
  let closed = false;
  showRecorded().catch(() => {}); // the form works without them: empty keeps the recording's
  return () => { closed = true; };

  /** The recording's first model call, as the model saw it: its system prompt and tools
   * fill the form, to be edited rather than written afresh. */
  async function showRecorded() {
    const page = await api(`/api/sessions/${source}/events?after_seq=0&limit=200`);
    const first = page.events.find((e) => e.kind === "llm.call");
    if (!first || closed) return;
    const call = await api(`/api/sessions/${source}/model-calls/${first.seq}`);
    if (closed) return;
    const system = (call.messages || []).find((m) => m.role === "system");
    if (system && typeof system.content === "string" && !prompt.value) {
      recorded.prompt = system.content;
      prompt.value = system.content;
    }
    const names = (call.tools || []).map((t) => (t.function || t).name).filter(Boolean);
    if (names.length && !tools.value) {
      recorded.tools = names;
      tools.value = names.join(", ");
    }
  }
}

/** What the divergence says, in full: its sentence and its diff. */
function divergenceDetails(d) {
  const parts = [el("p", { class: "divergence-summary" }, el("strong", {}, `Diverged (${d.kind.replaceAll("_", " ")}): `), d.summary)];
  if (d.message) {
    parts.push(el("p", { class: "small" }, `Prompt message ${d.message.index} (recorded ${d.message.recorded_role ?? "none"}, replay ${d.message.new_role ?? "none"})`),
      diffView(d.message.diff));
  }
  if (d.tools) {
    parts.push(el("p", { class: "small" }, [
      d.tools.removed.length ? `removed: ${d.tools.removed.join(", ")}` : "",
      d.tools.added.length ? `added: ${d.tools.added.join(", ")}` : "",
      d.tools.changed.length ? `changed: ${d.tools.changed.join(", ")}` : "",
    ].filter(Boolean).join(" · ")));
    if (d.tools.diff) parts.push(diffView(d.tools.diff));
  }
  if (d.params) {
    parts.push(el("div", { class: "table-wrap" }, el("table", { class: "sessions fields" },
      el("thead", {}, el("tr", {}, ["", "Recorded", "Replay"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, el("tr", {}, el("th", { scope: "row" }, "model and parameters"),
        el("td", {}, el("pre", {}, JSON.stringify(d.params.recorded, null, 2))),
        el("td", {}, el("pre", {}, JSON.stringify(d.params.new, null, 2))))))));
  }
  if (d.fields && d.fields.length) {
    parts.push(el("div", { class: "table-wrap" }, el("table", { class: "sessions fields" },
      el("thead", {}, el("tr", {}, ["Field", "Recorded", "Replay"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, d.fields.map((f) => el("tr", {}, el("th", { scope: "row" }, f.field),
        el("td", { class: "d-del" }, el("pre", {}, JSON.stringify(f.recorded, null, 2))),
        el("td", { class: "d-add" }, el("pre", {}, JSON.stringify(f.new, null, 2)))))))));
  }
  if (d.kind === "outcome") {
    parts.push(el("p", { class: "small" }, `recorded: ${d.recorded_state ?? "none"} ${d.recorded_reason || ""} · replay: ${d.new_state ?? "none"} ${d.new_reason || ""}`));
  }
  return parts;
}

/** The step a divergence points at (0 when there is none). */
function divergedStep(result) {
  const d = result?.divergence;
  if (!d) return 0;
  return Math.max(1, d.step || 1);
}

/** The recording and its replay side by side (#/replays/SOURCE/REPLAY). */
export function replayCompareView({ main, showError, clearError, go }, source, replay) {
  const status = el("p", { class: "muted", role: "status", "aria-live": "polite" }, "Loading the recording and its replay…");
  const summary = el("section", { class: "summary replay-summary", "aria-labelledby": "compare-title" },
    el("h1", { id: "compare-title" }, "Replay"), status);
  const body = el("div", { class: "compare-body" });
  clear(main).append(
    el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/" }, "Sessions"), " / ",
      el("a", { href: `#/sessions/${source}` }, source.slice(0, 8)), " / ",
      el("a", { href: `#/sessions/${replay}` }, `replay ${replay.slice(0, 8)}`)),
    summary, body);

  let closed = false;
  let timer = null;
  let stepper = null;

  function forkForm(session, seq, side) {
    const message = el("textarea", { id: "fork-message", rows: 2, placeholder: "Optional: a new instruction for the forked agent" });
    const start = el("button", { type: "submit" }, "Start the fork");
    const cancel = el("button", { type: "button", class: "secondary" }, "Cancel");
    const form = el("form", { class: "card fork-form", "aria-label": "Fork" },
      el("p", {}, `Fork the ${side} after event #${seq}: a new live session that starts with its events up to there and goes on with the real model.`),
      el("label", { for: "fork-message" }, "Message for the forked agent"), message,
      el("div", { class: "controls" }, start, cancel));
    cancel.addEventListener("click", () => form.remove());
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearError();
      start.disabled = true;
      const payload = { at_seq: seq };
      if (message.value.trim()) payload.message = message.value.trim();
      try {
        const made = await api(`/api/sessions/${session}/forks`, { method: "POST", body: payload });
        go(`/sessions/${made.id}`);
      } catch (error) {
        showError(error);
        start.disabled = false;
      }
    });
    return { form, message };
  }

  function draw(recorded, replayed, result) {
    const diverged = divergedStep(result);
    const d = result.divergence;
    const counts = `${result.steps_matched} of ${result.steps_recorded} model calls matched, ${result.steps_served} served, ${result.model_calls} made`;
    clear(summary).append(
      el("div", { class: "heading" }, el("h1", { id: "compare-title" }, "Replay"),
        el("span", { class: `state ${d ? "state-error" : "state-finished"}`, id: "replay-verdict" }, d ? "diverged" : result.matched ? "matched" : "differs")),
      el("p", { class: "muted small" }, `${result.mode} replay of `, el("a", { href: `#/sessions/${source}` }, source.slice(0, 8)),
        ` · ${counts} · ${result.outcome ? `ended ${result.outcome}` : "stopped there"} (the recording ended ${result.recorded_outcome ?? "unfinished"}) · ${result.seconds.toFixed(2)} s`),
      d ? el("section", { class: "divergence", "aria-label": "First divergence", id: "divergence" }, divergenceDetails(d))
        : el("p", { class: "ok" }, result.differences.length
          ? `No stop, but the requests differed at model call${result.differences.length === 1 ? "" : "s"} ${result.differences.map((x) => x.step).join(", ")}.`
          : "The replay did what the recording did, step for step."),
      el("div", { class: "controls" }, el("a", { class: "button secondary", href: `#/replays/${source}` }, "Replay again with other settings")));

    const toDivergence = el("button", { type: "button", class: "secondary", disabled: !d }, "Go to the divergence");
    const forkSlot = el("div", { class: "fork-slot" });

    /** The divergence outlined, and "Fork here" on every event of a step. */
    function decorate(list, { session, side }) {
      for (const item of list.children) {
        // an action drawn with its result forks after the result (not between the two)
        const seq = Math.max(...[item, ...item.querySelectorAll("[data-seq]")].map((node) => Number(node.dataset.seq) || 0));
        if (d && side === "recording" && d.recorded_seq === Number(item.dataset.seq)) {
          item.classList.add("divergence");
          item.setAttribute("aria-description", "the recorded event the replay diverged at");
        }
        if (seq < 2) continue; // a fork copies at least the session's creation and its task
        (item.querySelector(".meta") || item).append(el("button", { type: "button", class: "link fork-here",
          "aria-label": `Fork the ${side} here (after #${seq})`,
          onclick: () => {
            const { form, message } = forkForm(session, seq, side);
            forkSlot.replaceChildren(form);
            form.scrollIntoView({ block: "nearest" });
            message.focus();
          } }, "Fork here"));
      }
    }

    stepper = sideBySide({
      left: { key: "recorded", side: "recording", events: recorded, session: source, list: "Recorded events of this step",
        heading: ["Recorded ", el("a", { href: `#/sessions/${source}`, class: "small" }, source.slice(0, 8))],
        missing: "The recording has no such step." },
      right: { key: "replayed", side: "replay", events: replayed.filter((e) => e.kind !== "replay.result"), session: replay,
        list: "Replayed events of this step",
        heading: ["Replay ", el("a", { href: `#/sessions/${replay}`, class: "small" }, replay.slice(0, 8))],
        missing: "The replay has no such step." },
      chip: (i) => {
        const kind = !d || i < diverged ? "same" : i === diverged ? "diverged" : "after";
        return { kind, note: kind === "diverged" ? "the divergence" : "" };
      },
      start: diverged || null,
      stepNote: (i) => (d && i === diverged ? " · the divergence" : ""),
      onShow: (i, sides) => {
        for (const { section } of sides) section.classList.toggle("diverged", Boolean(d && i === diverged));
      },
      decorate,
      tools: [toDivergence],
    });
    toDivergence.addEventListener("click", () => stepper.show(diverged));
    const { node } = stepper;
    node.insertBefore(forkSlot, node.querySelector(".compare"));
    clear(body).append(node,
      el("p", { class: "muted small" }, "Keys: [ and ] step back and forth. Each event's Fork here starts a live session from it."));
  }

  async function load() {
    timer = null;
    try {
      const [recorded, replayed] = await Promise.all([allEvents(source), allEvents(replay)]);
      if (closed) return;
      const created = replayed.find((e) => e.kind === "session.created");
      if (created && created.payload.replay_of && created.payload.replay_of !== source) {
        throw new Error(`Session ${replay} is a replay of ${created.payload.replay_of}, not of ${source}.`);
      }
      const result = replayed.find((e) => e.kind === "replay.result");
      const failed = replayed.find((e) => e.kind === "agent.state" && e.payload.state === "error");
      if (!result && failed) {
        status.textContent = "";
        showError(new Error(`The replay could not run: ${failed.payload.reason || "see the replay's own page"}.`));
        return;
      }
      if (!result) {
        status.textContent = "The replay is still running…";
        timer = setTimeout(load, POLL_MS);
        return;
      }
      clearError();
      draw(recorded, replayed, result.payload);
    } catch (error) {
      if (closed) return;
      status.textContent = "";
      showError(error);
    }
  }
  load();
  return () => {
    closed = true;
    clearTimeout(timer);
    stepper?.close();
  };
}
