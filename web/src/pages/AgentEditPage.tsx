import { useEffect, useState } from "react";
import { describe, get, patch, post } from "../api";
import { SchemaForm } from "../forms/SchemaForm";
import { draftValue, type Draft, type FormField, type Payload } from "../forms/schema";
import { Link, navigate } from "../router";
import type { Agent, AgentForm } from "../types";

/** PATCH /agents/{id} changes a field but never sets it to null (400): an emptied JSON field
 * (the metadata, which POST takes as null) is sent as the empty object it stands for. */
export function emptiedNotNull(payload: Payload, fields: FormField[]): Payload {
  const json = new Set(fields.filter((f) => f.type === "json").map((f) => f.name));
  return Object.fromEntries(Object.entries(payload).map(([k, v]) => [k, v === null && json.has(k) ? {} : v]));
}

/** Create (no agentId) or edit an agent, from GET /agents/schema. */
export function AgentEditPage({ agentId }: { agentId?: string }) {
  const [form, setForm] = useState<AgentForm | null>(null);
  const [agent, setAgent] = useState<Agent | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  useEffect(() => {
    (async () => {
      try {
        const [schema, current] = await Promise.all([
          get<AgentForm>("/agents/schema"),
          agentId ? get<Agent>(`/agents/${agentId}`) : Promise.resolve(null),
        ]);
        setForm(schema);
        setAgent(current);
      } catch (e) {
        setFailure(describe(e));
      }
    })();
  }, [agentId]);

  async function save(payload: Payload) {
    if (agentId) {
      await patch<Agent>(`/agents/${agentId}`, emptiedNotNull(payload, form?.fields ?? []));
      navigate("/agents");
    } else {
      const created = await post<Agent>("/agents", payload);
      navigate(`/agents/${created.id}/chat`);
    }
  }

  const models = (draft: Draft): Record<string, string[]> => {
    const provider = draftValue(form?.fields.find((f) => f.name === "provider"), draft);
    return { model: form?.models[String(provider)] ?? [] };
  };

  const title = agentId ? `Edit ${agent?.name ?? "agent"}` : "New agent";
  return (
    <section>
      <h1>{title}</h1>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      {form && Object.keys(form.notes).length > 0 && (
        <ul className="notice">
          {Object.entries(form.notes).map(([provider, note]) => (
            <li key={provider}>
              {provider}: {note}
            </li>
          ))}
        </ul>
      )}
      {form && (!agentId || agent) && (
        <SchemaForm
          fields={form.fields}
          values={agent ? { ...agent } : undefined}
          suggestions={models}
          submitLabel={agentId ? "Save" : "Create agent"}
          onSubmit={save}
        />
      )}
      {!form && !failure && <p aria-live="polite">Loading…</p>}
      <p>
        <Link href="/agents">Back to agents</Link>
      </p>
    </section>
  );
}
