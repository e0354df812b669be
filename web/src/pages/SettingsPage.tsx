import "./memory-and-settings.css";
import { useEffect, useState } from "react";
import { del, describe, get, post, put } from "../api";
import { SchemaForm } from "../forms/SchemaForm";
import type { FormField, Payload } from "../forms/schema";
import { Failure } from "../errors";
import { InlineConfirm } from "../InlineConfirm";

interface ProviderForm {
  name: string;
  label: string;
  configurable: boolean;
  fields: FormField[];
}

interface StoredProvider {
  provider: string;
  label: string;
  /** As the server shows them: secrets masked, never the secret itself. */
  values: Record<string, unknown>;
  updated_at: string;
}

/** The secret fields that hold a value: the form leaves them empty, and empty keeps them. */
export function storedSecrets(fields: FormField[], stored: StoredProvider | undefined): Set<string> {
  return new Set(fields.filter((f) => f.secret && stored?.values[f.name] != null).map((f) => f.name));
}

/** Provider credentials, one form per provider from GET /settings/providers/schema. */
export function SettingsPage() {
  const [forms, setForms] = useState<ProviderForm[] | null>(null);
  const [stored, setStored] = useState<Record<string, StoredProvider>>({});
  const [failure, setFailure] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0); // a retry reads the page again

  async function loadStored() {
    const list = await get<StoredProvider[]>("/settings/providers");
    setStored(Object.fromEntries(list.map((p) => [p.provider, p])));
  }

  useEffect(() => {
    Promise.all([get<{ providers: ProviderForm[] }>("/settings/providers/schema"), loadStored()]).then(
      ([schema]) => setForms(schema.providers),
      (e) => setFailure(describe(e)),
    );
  }, [attempt]);

  return (
    <section>
      <h1>LLM providers</h1>
      <p className="muted">
        Credentials are encrypted at rest. A stored secret is never shown again, only masked (••••, or its last characters), and leaving its field
        empty keeps it.
      </p>
      {failure && (
        <Failure
          message={failure}
          onRetry={
            forms === null
              ? () => {
                  setFailure(null);
                  setAttempt((n) => n + 1);
                }
              : undefined
          }
        />
      )}
      {!forms && !failure && <p aria-live="polite">Loading…</p>}
      <div className="providers">
        {forms?.map((form) => (
          <Provider key={form.name} form={form} stored={stored[form.name]} onChange={loadStored} />
        ))}
      </div>
    </section>
  );
}

function Provider({ form, stored, onChange }: { form: ProviderForm; stored?: StoredProvider; onChange: () => Promise<void> }) {
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [testing, setTesting] = useState(false);
  const titleId = `provider-${form.name}`;

  async function save(payload: Payload) {
    setMessage(null);
    await put(`/settings/providers/${form.name}`, payload);
    await onChange();
    setMessage({ ok: true, text: "Saved." });
  }

  async function test() {
    setTesting(true);
    setMessage(null);
    try {
      const result = await post<{ ok: boolean; models: string[] }>(`/settings/providers/${form.name}/test`);
      const shown = result.models.slice(0, 5).join(", ");
      const more = result.models.length > 5 ? `, and ${result.models.length - 5} more` : "";
      setMessage({ ok: true, text: `Connected: ${result.models.length} models (${shown}${more}).` });
    } catch (e) {
      setMessage({ ok: false, text: `Connection failed: ${describe(e)}` });
    } finally {
      setTesting(false);
    }
  }

  async function remove() {
    setMessage(null);
    try {
      await del(`/settings/providers/${form.name}`);
      await onChange();
      setMessage({ ok: true, text: "Removed." });
    } catch (e) {
      setMessage({ ok: false, text: describe(e) });
    }
  }

  // Stored values fill the form, except secrets: those stay empty (shown masked below).
  const values = stored
    ? Object.fromEntries(Object.entries(stored.values).filter(([name]) => !form.fields.find((f) => f.name === name)?.secret))
    : undefined;

  return (
    <article className="card provider" aria-labelledby={titleId}>
      <h2 id={titleId}>{form.label}</h2>
      {!form.configurable && <p className="muted">Nothing to configure.</p>}
      {form.configurable && (
        <>
          <p className="muted" role="status">
            {stored ? `Configured, last saved ${new Date(stored.updated_at).toLocaleString()}.` : "Not configured."}
          </p>
          {stored && (
            <dl className="stored" aria-label={`Stored ${form.label} settings`}>
              {form.fields.map((f) => (
                <div key={f.name}>
                  <dt>{f.label}</dt>
                  <dd className="mono">{stored.values[f.name] == null ? "—" : String(stored.values[f.name])}</dd>
                </div>
              ))}
            </dl>
          )}
          <SchemaForm
            key={stored?.updated_at ?? "new"}
            fields={form.fields}
            values={values}
            storedSecrets={storedSecrets(form.fields, stored)}
            submitLabel="Save settings"
            onSubmit={save}
          />
          {message && (
            <p className={message.ok ? "notice ok" : "error"} role={message.ok ? "status" : "alert"}>
              {message.text}
            </p>
          )}
          {stored && (
            <p className="actions">
              <button type="button" className="secondary" onClick={test} disabled={testing}>
                {testing ? "Testing…" : "Test connection"}
              </button>
              <InlineConfirm
                label={`Remove ${form.label} settings`}
                text="Remove"
                what="Remove these credentials? Agents using this provider stop working."
                confirmLabel="Remove"
                onConfirm={remove}
              />
            </p>
          )}
        </>
      )}
    </article>
  );
}
