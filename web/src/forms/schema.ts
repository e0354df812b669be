// The backend's Form schema (api/kit/forms.py) and what a filled form becomes: the draft a
// person edits (text for every input, a flag for checkboxes) turned into the JSON the
// form's own POST/PUT accepts, or into a message per field saying what is wrong.

export type FieldType =
  | "string"
  | "url"
  | "integer"
  | "number"
  | "boolean"
  | "select"
  | "multiselect"
  | "text"
  | "json";

export interface Option {
  value: unknown;
  label: string;
}

export interface Validation {
  min_length?: number | null;
  max_length?: number | null;
  pattern?: string | null;
  minimum?: number | null;
  maximum?: number | null;
}

export interface FormField {
  name: string;
  label: string;
  type: FieldType;
  secret?: boolean;
  required?: boolean;
  nullable?: boolean;
  default?: unknown;
  description?: string | null;
  validation?: Validation;
  options?: Option[] | null;
}

/** Text for inputs, a flag for checkboxes, the chosen options' indexes for a multiselect. */
export type Draft = Record<string, string | boolean | string[]>;
export type Payload = Record<string, unknown>;

/** The text an input shows for a value (a select keeps the index of its option, as option
 * values may be any JSON). */
function text(field: FormField, value: unknown): string | boolean | string[] {
  if (field.type === "boolean") return value === true;
  if (field.type === "multiselect") {
    const chosen = Array.isArray(value) ? value : [];
    return (field.options ?? []).flatMap((o, i) => (chosen.some((v) => sameValue(o.value, v)) ? [String(i)] : []));
  }
  if (value === null || value === undefined) return "";
  if (field.type === "select") {
    const index = (field.options ?? []).findIndex((o) => sameValue(o.value, value));
    return index === -1 ? "" : String(index);
  }
  if (field.type === "json") return JSON.stringify(value, null, 2);
  return String(value);
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A new draft: the stored values when editing, else the schema's defaults. Secrets start
 * empty: they are never read back, and empty keeps what is stored. */
export function initialDraft(fields: FormField[], values?: Payload): Draft {
  const draft: Draft = {};
  for (const field of fields) {
    const value = values && field.name in values ? values[field.name] : field.default;
    draft[field.name] = field.secret ? "" : text(field, value);
  }
  return draft;
}

export interface Filled {
  payload: Payload;
  errors: Record<string, string>;
}

/** The payload for the draft, or the errors that keep it from being sent. `storedSecrets`
 * names the secret fields that already have a value (left empty, they keep it). */
export function fill(fields: FormField[], draft: Draft, storedSecrets: Set<string> = new Set()): Filled {
  const payload: Payload = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const raw = draft[field.name];
    if (field.type === "boolean") {
      payload[field.name] = raw === true;
      continue;
    }
    if (field.type === "multiselect") {
      const chosen = Array.isArray(raw) ? raw : [];
      payload[field.name] = chosen.map((i) => (field.options ?? [])[Number(i)]?.value).filter((v) => v !== undefined);
      continue;
    }
    const entered = typeof raw === "string" ? raw : "";
    const blank = field.type === "json" ? entered.trim() === "" : entered === "";
    if (blank) {
      if (field.secret && storedSecrets.has(field.name)) continue;
      if (field.required) errors[field.name] = `${field.label} is required.`;
      else if (field.nullable) payload[field.name] = null;
      else if (field.default === "") payload[field.name] = ""; // emptied on purpose, say a persona
      // Otherwise left out: the server's default applies.
      continue;
    }
    const parsed = parse(field, entered);
    if ("error" in parsed) errors[field.name] = parsed.error;
    else payload[field.name] = parsed.value;
  }
  return { payload, errors };
}

type Parsed = { value: unknown } | { error: string };

function parse(field: FormField, entered: string): Parsed {
  const rules = field.validation ?? {};
  switch (field.type) {
    case "integer":
    case "number": {
      const value = Number(entered.trim());
      if (entered.trim() === "" || !Number.isFinite(value)) return { error: `${field.label} must be a number.` };
      if (field.type === "integer" && !Number.isInteger(value)) return { error: `${field.label} must be a whole number.` };
      if (rules.minimum != null && value < rules.minimum) return { error: `${field.label} must be at least ${rules.minimum}.` };
      if (rules.maximum != null && value > rules.maximum) return { error: `${field.label} must be at most ${rules.maximum}.` };
      return { value };
    }
    case "select": {
      const option = (field.options ?? [])[Number(entered)];
      return option ? { value: option.value } : { error: `Choose one of the ${field.label} options.` };
    }
    case "json": {
      try {
        return { value: JSON.parse(entered) };
      } catch (e) {
        return { error: `${field.label} is not valid JSON: ${(e as Error).message}` };
      }
    }
    case "url": {
      try {
        const url = new URL(entered);
        if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("scheme");
      } catch {
        return { error: `${field.label} must be a full http(s) URL.` };
      }
      return checkText(field, entered);
    }
    default:
      return checkText(field, entered);
  }
}

function checkText(field: FormField, value: string): Parsed {
  const rules = field.validation ?? {};
  const length = [...value].length; // characters, as the server counts them
  if (rules.min_length != null && length < rules.min_length)
    return { error: `${field.label} needs at least ${rules.min_length} characters.` };
  if (rules.max_length != null && length > rules.max_length)
    return { error: `${field.label} takes at most ${rules.max_length} characters.` };
  if (rules.pattern) {
    let pattern: RegExp | null = null;
    try {
      pattern = new RegExp(rules.pattern, "u");
    } catch {
      // A pattern JavaScript cannot read: the server still checks it.
    }
    if (pattern && !pattern.test(value)) return { error: `${field.label} is not in the expected form.` };
  }
  return { value };
}

/** Field errors from the API's 422 (`details.errors[].loc` = ["body", name, ...]). */
export function serverFieldErrors(details: unknown): Record<string, string> {
  const errors: Record<string, string> = {};
  const list = (details as { errors?: { loc?: string[]; message?: string }[] } | null)?.errors;
  for (const e of list ?? []) {
    const name = e.loc && e.loc[0] === "body" ? e.loc[1] : undefined;
    if (name && !(name in errors)) errors[name] = e.message ?? "Not valid.";
  }
  return errors;
}

/** The value a field's draft stands for (a select's option value), for forms whose hints
 * depend on another field. */
export function draftValue(field: FormField | undefined, draft: Draft): unknown {
  if (!field) return undefined;
  const raw = draft[field.name];
  if (field.type === "select") return (field.options ?? [])[Number(raw)]?.value;
  return raw;
}
