// The one form renderer: every form of the app is a backend schema drawn by this component.

import { useEffect, useId, useState, type FormEvent } from "react";
import { ApiError, describe } from "../api";
import { Counter } from "../Counter";
import { fill, initialDraft, serverFieldErrors, type Draft, type FormField, type Payload } from "./schema";

export interface SchemaFormProps {
  fields: FormField[];
  /** Stored values when editing (secrets are never among them). */
  values?: Payload;
  /** Secret fields that have a stored value: left empty, they keep it. */
  storedSecrets?: Set<string>;
  /** Suggestions for text fields, by field name (say, the models of the chosen provider). */
  suggestions?: (draft: Draft) => Record<string, string[]>;
  /** Notes shown under fields, by field name (say, a model its provider does not list). */
  hints?: (draft: Draft) => Record<string, string>;
  /** The draft after a field changed, for fields that follow another (a model that is not
   * the newly chosen provider's); `changed` is "" when `revision` changed (what the fields
   * follow arrived: a provider's models). */
  adjust?: (changed: string, draft: Draft) => Draft;
  revision?: unknown;
  submitLabel: string;
  onSubmit: (payload: Payload) => Promise<void>;
}

export function SchemaForm({
  fields,
  values,
  storedSecrets,
  suggestions,
  hints,
  adjust,
  revision,
  submitLabel,
  onSubmit,
}: SchemaFormProps) {
  const formId = useId();
  const [draft, setDraft] = useState<Draft>(() => initialDraft(fields, values));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (adjust) setDraft((d) => adjust("", d));
    // Only when what the fields follow changed; `adjust` is a new function at every render.
  }, [revision]);
  const lists = suggestions?.(draft) ?? {};
  const notes = hints?.(draft) ?? {};

  async function submit(event: FormEvent) {
    event.preventDefault();
    const filled = fill(fields, draft, storedSecrets);
    setErrors(filled.errors);
    setFailure(null);
    if (Object.keys(filled.errors).length > 0) {
      const first = fields.find((f) => f.name in filled.errors);
      if (first) document.getElementById(`${formId}-${first.name}`)?.focus();
      return;
    }
    setBusy(true);
    try {
      await onSubmit(filled.payload);
    } catch (e) {
      if (e instanceof ApiError && e.code === "validation_error") setErrors(serverFieldErrors(e.details));
      setFailure(describe(e));
    } finally {
      setBusy(false);
    }
  }

  const set = (name: string, value: string | boolean | string[]) => {
    setDraft((d) => {
      const next = { ...d, [name]: value };
      return adjust ? adjust(name, next) : next;
    });
    // An edited field's old complaint no longer applies; submitting checks it again.
    setErrors((e) => (name in e ? Object.fromEntries(Object.entries(e).filter(([k]) => k !== name)) : e));
  };

  return (
    <form className="schema-form" onSubmit={submit} noValidate>
      {fields.map((field) => {
        const id = `${formId}-${field.name}`;
        const helpId = `${id}-help`;
        const errorId = `${id}-error`;
        const hintId = `${id}-hint`;
        const described = [
          field.description ? helpId : null,
          notes[field.name] ? hintId : null,
          field.validation?.max_length != null ? `${id}-count` : null,
          errors[field.name] ? errorId : null,
        ]
          .filter(Boolean)
          .join(" ") || undefined;
        const common = {
          id,
          name: field.name,
          "aria-describedby": described,
          "aria-invalid": errors[field.name] ? true : undefined,
          required: field.required || undefined,
        };
        const value = draft[field.name];
        const suggested = lists[field.name];
        let input;
        switch (field.type) {
          case "boolean":
            input = <input {...common} type="checkbox" checked={value === true} onChange={(e) => set(field.name, e.target.checked)} />;
            break;
          case "select":
            input = (
              <select {...common} value={String(value)} onChange={(e) => set(field.name, e.target.value)}>
                {!field.required && <option value="">—</option>}
                {(field.options ?? []).map((o, i) => (
                  <option key={i} value={String(i)}>
                    {o.label}
                  </option>
                ))}
              </select>
            );
            break;
          case "multiselect":
            // Any number of the options (a person's agents, for specialists): a box each.
            input = (
              <fieldset {...common} className="choices">
                {(field.options ?? []).length === 0 && <span className="muted">None to choose from yet.</span>}
                {(field.options ?? []).map((o, i) => {
                  const chosen = Array.isArray(value) ? value : [];
                  return (
                    <label key={i} className="choice">
                      <input
                        type="checkbox"
                        name={`${field.name}-${i}`}
                        checked={chosen.includes(String(i))}
                        onChange={(e) =>
                          set(
                            field.name,
                            e.target.checked ? [...chosen, String(i)] : chosen.filter((c) => c !== String(i)),
                          )
                        }
                      />{" "}
                      {o.label}
                    </label>
                  );
                })}
              </fieldset>
            );
            break;
          case "text":
          case "json":
            input = (
              <textarea
                {...common}
                rows={field.type === "json" ? 4 : 5}
                spellCheck={field.type === "text"}
                className={field.type === "json" ? "mono" : undefined}
                value={String(value)}
                onChange={(e) => set(field.name, e.target.value)}
              />
            );
            break;
          default:
            input = (
              <input
                {...common}
                type={field.secret ? "password" : field.type === "url" ? "url" : field.type === "string" ? "text" : "number"}
                step={field.type === "number" ? "any" : undefined}
                min={field.validation?.minimum ?? undefined}
                max={field.validation?.maximum ?? undefined}
                autoComplete={field.secret ? "new-password" : "off"}
                placeholder={field.secret && storedSecrets?.has(field.name) ? "•••••• (stored; leave empty to keep)" : undefined}
                list={suggested ? `${id}-list` : undefined}
                value={String(value)}
                onChange={(e) => set(field.name, e.target.value)}
              />
            );
        }
        return (
          <div className={`field field-${field.type}`} key={field.name}>
            <label htmlFor={id}>
              {field.label}
              {field.required && <span aria-hidden="true"> *</span>}
            </label>
            {input}
            {suggested && (
              <datalist id={`${id}-list`}>
                {suggested.map((s) => (
                  <option key={s} value={s} />
                ))}
              </datalist>
            )}
            {field.description && (
              <p className="help" id={helpId}>
                {field.description}
              </p>
            )}
            {field.validation?.max_length != null && typeof value === "string" && (
              <Counter id={`${id}-count`} length={value.length} limit={field.validation.max_length} />
            )}
            {notes[field.name] && (
              <p className="field-hint" id={hintId} aria-live="polite">
                {notes[field.name]}
              </p>
            )}
            {errors[field.name] && (
              <p className="field-error" id={errorId} role="alert">
                {errors[field.name]}
              </p>
            )}
          </div>
        );
      })}
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      <button type="submit" disabled={busy}>
        {busy ? "Saving…" : submitLabel}
      </button>
    </form>
  );
}
