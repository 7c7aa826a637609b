// Replays: run a recorded session again with another agent configuration (system prompt,
// tools, limits) without calling the model, then step through the recording and the replay
// side by side, model call by model call, the first divergence highlighted with its diff;
// "Fork here" starts a live session from any step of either side.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { diffView } from "./timeline.js";
import { allEvents, sideBySide } from "./side_by_side.js";
import { agentFields, field } from "./agent_fields.js";

const POLL_MS = 1000;

/** The replay form of one recorded session (#/replays/ID). */
export function replayFormView({ main, showError, clearError, go }, source) {
  const agent = agentFields("r");
  const mode = el("select", { id: "r-mode", name: "mode" },
    el("option", { value: "strict" }, "strict: stop at the first difference"),
    el("option", { value: "positional" }, "positional: serve the Nth reply whatever was asked"));
  const atDivergence = el("select", { id: "r-on-divergence", name: "on_divergence", "aria-describedby": "r-on-divergence-help" },
    el("option", { value: "stop" }, "stop and show it"),
    el("option", { value: "fork" }, "fork there and go on live with the real model"));
  const submit = el("button", { type: "submit" }, "Run the replay");
  const form = el("form", { class: "card", "aria-labelledby": "replay-title" },
    el("h1", { id: "replay-title" }, "Replay"),
    el("p", {}, "Run this recorded session again with another agent configuration. The recorded model replies and command results answer the agent, so nothing calls a model or runs a command; the first step where the agent behaves differently is shown with its diff."),
    el("p", { class: "muted small" }, "Recording ", el("a", { href: `#/sessions/${source}` }, source)),
    agent.agentRows(),
    el("fieldset", {}, el("legend", {}, "Model parameters"), agent.paramRows()),
    el("fieldset", {}, el("legend", {}, "Limits and mode"),
      agent.stepsRow(), field("r-mode", "Mode", mode),
      field("r-on-divergence", "At the first divergence", atDivergence,
        "Fork: a live session copied up to the step before it runs on with these settings, calling the model (it costs).")),
    submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    const body = { mode: mode.value, on_divergence: atDivergence.value, overrides: agent.overrides() };
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
  agent.inputs.prompt.focus();
  let closed = false;
  // the form works without them: empty keeps the recording's
  agent.fill(source, () => closed).catch(() => {});
  return () => { closed = true; };
}

/** What the divergence says, in full: its sentence and its diff. */
function divergenceDetails(d, lead = "Diverged") {
  const parts = [el("p", { class: "divergence-summary" }, el("strong", {}, `${lead} (${d.kind.replaceAll("_", " ")}): `), d.summary)];
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
  if (d.kind === "redacted") {
    // what went from the recording, and why: the replay cannot serve or compare it
    parts.push(el("ul", { class: "small redacted-parts" }, (d.parts || []).map((p) =>
      el("li", {}, `seq ${p.seq} ${p.path || "(the whole event)"}: ${p.reason || "no redaction record says why"}`))));
  }
  if (d.kind === "outcome") {
    parts.push(el("p", { class: "small" }, `recorded: ${d.recorded_state ?? "none"} ${d.recorded_reason || ""} · replay: ${d.new_state ?? "none"} ${d.new_reason || ""}`));
  }
  return parts;
}

/** A positional replay's request differences by step (it goes on after each). */
function differencesByStep(result) {
  return new Map((result?.differences || []).map((difference) => [difference.step, difference]));
}

/** "1-3, 5": steps as ranges. */
function stepRanges(steps) {
  const ranges = [];
  for (const step of [...steps].sort((a, b) => a - b)) {
    const last = ranges[ranges.length - 1];
    if (last && step === last[1] + 1) last[1] = step;
    else ranges.push([step, step]);
  }
  return ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(", ");
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

  /** The fork form of event ``seq`` of ``session``: a message, and the model and agent
   * settings filled with the session's own (a replay's changed prompt included). */
  function forkForm(session, seq, side) {
    const message = el("textarea", { id: "fork-message", rows: 2, placeholder: "Optional: a new instruction for the forked agent" });
    const agent = agentFields("f", { model: true });
    const start = el("button", { type: "submit" }, "Start the fork");
    const cancel = el("button", { type: "button", class: "secondary" }, "Cancel");
    const form = el("form", { class: "card fork-form", "aria-label": "Fork" },
      el("p", {}, `Fork the ${side} after event #${seq}: a new live session that starts with its events up to there and goes on with the real model.`),
      field("fork-message", "Message for the forked agent", message),
      el("details", { class: "fork-settings" },
        el("summary", {}, `Model and agent settings (the ${side}'s; change what the fork should do differently)`),
        agent.agentRows(),
        el("fieldset", {}, el("legend", {}, "Model parameters and limits"), agent.paramRows(), agent.stepsRow())),
      el("div", { class: "controls" }, start, cancel));
    let gone = false;
    cancel.addEventListener("click", () => { gone = true; form.remove(); });
    agent.fill(session, () => gone || closed).catch(() => {}); // empty fields keep the session's
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearError();
      start.disabled = true;
      const payload = { at_seq: seq };
      if (message.value.trim()) payload.message = message.value.trim();
      const model = agent.model();
      if (model) payload.model = model;
      const overrides = agent.overrides();
      if (Object.keys(overrides).length) payload.overrides = overrides;
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
    const differed = differencesByStep(result);
    const firstDifference = differed.size ? Math.min(...differed.keys()) : null;
    const verdict = d ? ["diverged", "state-error"] : differed.size ? ["requests differed", "state-paused"] : ["matched", "state-finished"];
    const counts = `${result.steps_matched} of ${result.steps_recorded} model calls matched, ${result.steps_served} served, ${result.model_calls} made`;
    clear(summary).append(
      el("div", { class: "heading" }, el("h1", { id: "compare-title" }, "Replay"),
        el("span", { class: `state ${verdict[1]}`, id: "replay-verdict" }, verdict[0])),
      el("p", { class: "muted small" }, `${result.mode} replay of `, el("a", { href: `#/sessions/${source}` }, source.slice(0, 8)),
        ` · ${counts} · ${result.outcome ? `ended ${result.outcome}` : "stopped there"} (the recording ended ${result.recorded_outcome ?? "unfinished"}) · ${result.seconds.toFixed(2)} s`),
      d ? el("section", { class: "divergence", "aria-label": "First divergence", id: "divergence" }, divergenceDetails(d))
        : differed.size
          ? el("p", { class: "warn", id: "differences" }, `No stop, but the agent asked the model something else than recorded at model call${differed.size === 1 ? "" : "s"} ${stepRanges(differed.keys())}: the recorded replies were served anyway (positional). Each such step is marked; open one to see its request's diff.`)
          : el("p", { class: "ok" }, "The replay did what the recording did, step for step."),
      el("div", { class: "controls" }, el("a", { class: "button secondary", href: `#/replays/${source}` }, "Replay again with other settings")));

    const toDivergence = el("button", { type: "button", class: "secondary", disabled: !d && !differed.size },
      d ? "Go to the divergence" : "Go to the first difference");
    const stepDifference = el("section", { class: "step-difference", "aria-label": "This step's request, recorded against replayed", hidden: true });
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
        if (differed.has(i) && !(d && i >= diverged)) return { kind: "differed", note: "the request differed" };
        const kind = !d || i < diverged ? "same" : i === diverged ? "diverged" : "after";
        return { kind, note: kind === "diverged" ? "the divergence" : "" };
      },
      start: diverged || firstDifference,
      stepNote: (i) => (d && i === diverged ? " · the divergence" : differed.has(i) ? " · the request differed" : ""),
      onShow: (i, sides) => {
        for (const { section } of sides) section.classList.toggle("diverged", Boolean(d && i === diverged));
        const difference = differed.get(i);
        stepDifference.hidden = !difference;
        stepDifference.replaceChildren(...(difference ? divergenceDetails(difference, "The request differed") : []));
      },
      decorate,
      tools: [toDivergence],
    });
    toDivergence.addEventListener("click", () => stepper.show(diverged || firstDifference));
    const { node } = stepper;
    node.insertBefore(forkSlot, node.querySelector(".compare"));
    node.insertBefore(stepDifference, forkSlot);
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
