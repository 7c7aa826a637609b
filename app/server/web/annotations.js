// Annotations on a session's page: a person's label (with a comment and tags) on one event or
// on the whole session, recorded as an `annotation` event of the session
// (POST /api/sessions/ID/annotations). Each shows as a chip on what it is about (label, who,
// when; the comment on hover and when opened) and as an entry of its own in the timeline. The
// chips come from GET /api/sessions/ID/annotations, read with the first page of events, so an
// annotation written long after the event it is about (on a later page of a long session)
// still marks it on the first screen; new ones arrive with the live stream.
// Also: the sessions list's label and tag filters.

import { api } from "./api.js";
import { el } from "./dom.js";
import { clock, localTime } from "./format.js";

/** The labels offered (any text is a label; SUGGESTED_LABELS in app/events/annotation.py). */
export const SUGGESTED_LABELS = ["unsafe command", "wrong answer", "good", "bad", "needs attention", "reviewed"];
const LABELS_LIST_ID = "annotation-labels";

/** The <datalist> of suggested labels, added to the document once (inputs name it by id). */
export function labelSuggestions() {
  let list = document.getElementById(LABELS_LIST_ID);
  if (!list) {
    list = el("datalist", { id: LABELS_LIST_ID }, SUGGESTED_LABELS.map((label) => el("option", { value: label })));
    document.body.append(list);
  }
  return LABELS_LIST_ID;
}

function labelClass(label) {
  const known = SUGGESTED_LABELS.includes(label.toLowerCase()) ? label.toLowerCase() : "other";
  return `label-${known.replaceAll(" ", "-")}`;
}

/** An annotation as the API gives it, from its event (the live stream's). */
function fromEvent(event) {
  const p = event.payload;
  return { seq: event.seq, created_at: event.created_at, user: p.user ?? null, label: p.label ?? "",
    comment: p.comment ?? "", tags: p.tags ?? [], target_seq: p.target_seq ?? null,
    copied_from: p.replayed_from ?? null };
}

/** The chip: label, who and when; the comment on hover and when opened, with the tags. */
export function chip(a) {
  const about = a.target_seq === null ? "the session" : `#${a.target_seq}`;
  const hover = [a.comment, a.tags.length ? `tags: ${a.tags.join(", ")}` : ""].filter(Boolean).join("\n");
  const more = a.comment || a.tags.length || a.copied_from;
  const head = [el("span", { class: "chip-label" }, a.label), ` · ${a.user || "?"} · `,
    el("time", { datetime: a.created_at, title: localTime(a.created_at) }, clock(a.created_at))];
  const attributes = { class: `annotation-chip ${labelClass(a.label)}`, "data-annotation": a.seq,
    title: hover || null, "aria-label": `${a.label} on ${about} by ${a.user || "unknown"}${a.comment ? `: ${a.comment}` : ""}` };
  if (!more) return el("span", attributes, ...head);
  return el("details", attributes, el("summary", {}, ...head),
    el("div", { class: "chip-body" },
      a.comment ? el("p", { class: "chip-comment" }, a.comment) : null,
      a.tags.length ? el("p", { class: "chip-tags" }, a.tags.map((tag) => el("span", { class: "tag" }, tag))) : null,
      a.copied_from ? el("p", { class: "muted small" }, `copied from the source session's #${a.copied_from}`) : null));
}

/** What the timeline shows of an `annotation` event, as an entry of its own. */
export function annotationEntry(event) {
  const a = fromEvent(event);
  return [
    el("p", { class: "annotation-about" }, a.target_seq === null ? "On the whole session" : ["On ",
      el("button", { type: "button", class: "link annotation-target", "data-target-seq": a.target_seq,
        "aria-label": `Go to event #${a.target_seq}` }, `#${a.target_seq}`)]),
    chip(a),
  ];
}

/** The form: a label (suggested or typed), a comment and tags. `onSave({label, comment,
 * tags})` records it; the form closes itself once that resolves. */
function annotateForm(title, onSave, onClose) {
  const n = ++annotateForm.count;
  const label = el("input", { id: `a-label-${n}`, name: "label", list: labelSuggestions(), required: true, maxlength: 100,
    autocomplete: "off", placeholder: "e.g. unsafe command" });
  const comment = el("textarea", { id: `a-comment-${n}`, name: "comment", rows: 2, maxlength: 4000 });
  const tags = el("input", { id: `a-tags-${n}`, name: "tags", autocomplete: "off", placeholder: "comma-separated",
    "aria-describedby": `a-tags-help-${n}` });
  const save = el("button", { type: "submit" }, "Save annotation");
  const cancel = el("button", { type: "button", class: "secondary" }, "Cancel");
  const form = el("form", { class: "annotate-form", "aria-label": title },
    el("p", { class: "annotate-title" }, title),
    el("div", { class: "annotate-fields" },
      el("div", {}, el("label", { for: label.id }, "Label"), label),
      el("div", {}, el("label", { for: tags.id }, "Tags"), tags,
        el("p", { class: "visually-hidden", id: `a-tags-help-${n}` }, "Tags separated by commas")),
      el("div", { class: "wide" }, el("label", { for: comment.id }, "Comment (optional)"), comment)),
    el("div", { class: "actions" }, save, cancel));
  cancel.addEventListener("click", onClose);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = label.value.trim();
    if (!text) return;
    save.disabled = true;
    try {
      await onSave({ label: text, comment: comment.value.trim(),
        tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean) });
      onClose();
    } finally {
      save.disabled = false;
    }
  });
  return { form, label };
}
annotateForm.count = 0;

/** A session's annotations on its page: chips on what they are about, the Annotate control on
 * each event and on the session. `list` is the timeline's <ol>; `summary` the summary card,
 * where the session's own chips and its Annotate button go (`summaryChips`, `button`). */
export class SessionAnnotations {
  constructor({ sessionId, list, showError }) {
    this.sessionId = sessionId;
    this.list = list;
    this.showError = showError;
    this.byTarget = new Map(); // target seq -> annotations
    this.seen = new Set(); // seqs of the annotations shown
    this.open = null; // the open form's {form, close}
    this.summaryChips = el("div", { class: "annotation-chips session-annotations", "aria-label": "Annotations on the session" });
    this.button = el("button", { type: "button", class: "secondary annotate-session", title: "label the whole session" }, "Annotate…");
    this.button.addEventListener("click", () => this.openForm(null, this.summaryChips));
    this.list.addEventListener("click", (event) => {
      const target = event.target.closest(".annotate-here");
      if (target) this.openForm(Number(target.dataset.annotateSeq), target.closest(".timeline > li"));
      const link = event.target.closest(".annotation-target");
      if (link) {
        const seq = Number(link.dataset.targetSeq);
        const node = this.itemOf(seq);
        if (node) { node.focus(); node.scrollIntoView({ block: "center" }); }
        else location.hash = `#/sessions/${this.sessionId}/events/${seq}`; // not drawn: open it
      }
    });
  }

  /** The session's annotations so far (read once); drawn events get their chips as they are
   * drawn. */
  load() {
    this.loading ??= this.fetch();
    return this.loading;
  }

  async fetch() {
    try {
      const found = await api(`/api/sessions/${this.sessionId}/annotations`);
      for (const a of found.annotations) this.add(a);
    } catch (error) {
      if (error.status !== 404) this.showError(error); // the page says when there is no session
    }
  }

  /** Annotations among events from the stream (the timeline draws their own entries). */
  take(events) {
    for (const event of events) if (event.kind === "annotation") this.add(fromEvent(event));
  }

  add(a) {
    if (this.seen.has(a.seq)) return;
    this.seen.add(a.seq);
    const key = a.target_seq;
    if (!this.byTarget.has(key)) this.byTarget.set(key, []);
    this.byTarget.get(key).push(a);
    if (key === null) this.summaryChips.append(chip(a));
    else {
      const node = this.itemOf(key);
      if (node) this.chipsOf(node).append(chip(a));
    }
  }

  /** The timeline's entry holding the event at `seq` (an output is inside its command's). */
  itemOf(seq) {
    return this.list.querySelector(`[data-seq="${seq}"]`)?.closest(".timeline > li") || null;
  }

  chipsOf(node) {
    let chips = node.querySelector(":scope > .annotation-chips");
    if (!chips) {
      chips = el("div", { class: "annotation-chips", "aria-label": "Annotations" });
      const button = node.querySelector(":scope > .annotate-here");
      if (button) button.before(chips);
      else node.append(chips);
    }
    return chips;
  }

  /** The timeline's hook for each event it draws: its chips, and (on an entry of its own) its
   * Annotate button. `node` is the entry, or an output drawn inside its command's entry. */
  decorate(event, node, inside = false) {
    const entry = inside ? node.closest(".timeline > li") : node;
    if (!entry) return;
    if (!inside && event.kind !== "annotation") { // on the event's line (a model call has none)
      (entry.querySelector(":scope > .meta") || entry).append(el("button", { type: "button", class: "link annotate-here",
        "data-annotate-seq": event.seq, "aria-label": `Annotate event #${event.seq}` }, "Annotate"));
    }
    for (const a of this.byTarget.get(event.seq) || []) this.chipsOf(entry).append(chip(a));
  }

  openForm(seq, where) {
    this.open?.close();
    const title = seq === null ? "Annotate the session" : `Annotate event #${seq}`;
    const close = () => {
      form.remove();
      if (this.open?.form === form) this.open = null;
    };
    const { form, label } = annotateForm(title, async (fields) => {
      try {
        const made = await api(`/api/sessions/${this.sessionId}/annotations`, { method: "POST",
          body: { ...fields, target_seq: seq } });
        this.add(made);
      } catch (error) {
        this.showError(error);
        throw error;
      }
    }, close);
    this.open = { form, close };
    if (seq === null) where.after(form); // under the session's chips
    else where.append(form); // at the end of the event's entry
    form.scrollIntoView({ block: "nearest" });
    label.focus();
  }
}

/** The sessions list's filters by annotation: a label (suggested or typed) and a tag, each
 * applied by the API (`label=`, `tag=`). `onChange` reloads the list. */
export function annotationFilters(onChange) {
  const label = el("input", { id: "f-label", name: "label", list: labelSuggestions(), autocomplete: "off",
    placeholder: "e.g. unsafe command" });
  const tag = el("input", { id: "f-tag", name: "tag", autocomplete: "off" });
  for (const input of [label, tag]) input.addEventListener("change", onChange);
  return {
    fields: [
      el("div", {}, el("label", { for: "f-label" }, "Annotation label"), label),
      el("div", {}, el("label", { for: "f-tag" }, "Annotation tag"), tag),
    ],
    active: () => Boolean(label.value.trim() || tag.value.trim()),
    apply(params) {
      label.value.trim() ? params.set("label", label.value.trim()) : params.delete("label");
      tag.value.trim() ? params.set("tag", tag.value.trim()) : params.delete("tag");
    },
  };
}
