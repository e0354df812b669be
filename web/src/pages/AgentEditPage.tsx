import { useEffect, useState } from "react";
import { describe, get, patch, post } from "../api";
import { isMissingAgent, MissingAgent } from "../errors";
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

interface ProviderModels {
  provider: string;
  models: string[];
  note: string | null;
}

/** Create (no agentId) or edit an agent, from GET /agents/schema. The form is drawn at once;
 * each provider's models arrive on their own (a slow provider holds up only its own). */
export function AgentEditPage({ agentId }: { agentId?: string }) {
  const [form, setForm] = useState<AgentForm | null>(null);
  const [agent, setAgent] = useState<Agent | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const [listed, setListed] = useState<Record<string, ProviderModels>>({});

  useEffect(() => {
    let current = true;
    (async () => {
      try {
        const [schema, stored] = await Promise.all([
          get<AgentForm>("/agents/schema?models=false"),
          agentId ? get<Agent>(`/agents/${agentId}`) : Promise.resolve(null),
        ]);
        if (!current) return;
        // An agent is never its own specialist (400 specialist_is_self): not offered.
        const fields = schema.fields.map((f) =>
          f.name === "specialists" && stored
            ? { ...f, options: f.options?.filter((o) => o.value !== stored.id) }
            : f,
        );
        setForm({ ...schema, fields });
        setAgent(stored);
        for (const option of schema.fields.find((f) => f.name === "provider")?.options ?? []) {
          const provider = String(option.value);
          get<ProviderModels>(`/agents/schema/models/${encodeURIComponent(provider)}`).then(
            (found) => current && setListed((old) => ({ ...old, [provider]: found })),
            (e) => current && setListed((old) => ({ ...old, [provider]: { provider, models: [], note: describe(e) } })),
          );
        }
      } catch (e) {
        if (current && isMissingAgent(e)) setMissing(true);
        else if (current) setFailure(describe(e));
      }
    })();
    return () => {
      current = false;
    };
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

  const providerOf = (draft: Draft) => String(draftValue(form?.fields.find((f) => f.name === "provider"), draft));
  const models = (draft: Draft): Record<string, string[]> => ({ model: listed[providerOf(draft)]?.models ?? [] });

  // A model the chosen provider does not list: said under the field (a compatible server may
  // still serve it, so it is not refused).
  const hints = (draft: Draft): Record<string, string> => {
    const provider = providerOf(draft);
    const found = listed[provider];
    const model = String(draft.model ?? "").trim();
    if (!found) return { model: `Loading the models of ${provider}…` };
    if (found.note) return { model: `The models of ${provider} could not be listed: ${found.note}` };
    if (model && found.models.length > 0 && !found.models.includes(model)) {
      return { model: `${model} is not among the models ${provider} lists.` };
    }
    return {};
  };

  // Choosing another provider takes its first model, unless the model typed is one of its;
  // so do its models arriving after it was chosen, when the model is another provider's.
  const adjust = (changed: string, draft: Draft): Draft => {
    if (changed !== "provider" && changed !== "") return draft;
    const provider = providerOf(draft);
    const found = listed[provider]?.models ?? [];
    const model = String(draft.model);
    if (found.length === 0 || found.includes(model)) return draft;
    const anothers = Object.values(listed).some((l) => l.provider !== provider && l.models.includes(model));
    if (changed === "" && !anothers) return draft; // typed by the person: theirs to keep
    return { ...draft, model: found[0] };
  };

  const title = agentId ? `Edit ${agent?.name ?? "agent"}` : "New agent";
  if (missing) return <MissingAgent />;
  return (
    <section>
      <h1>{title}</h1>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      {form && (!agentId || agent) && (
        <SchemaForm
          fields={form.fields}
          values={agent ? { ...agent } : undefined}
          suggestions={models}
          hints={hints}
          adjust={adjust}
          revision={listed}
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
