import "./memory-and-settings.css";
import { useEffect, useState, type FormEvent } from "react";
import { authMode, del, describe, get, post } from "../api";
import { CopyButton } from "../CopyButton";
import { Counter, tooLong } from "../Counter";
import { Failure } from "../errors";
import { InlineConfirm } from "../InlineConfirm";

const KEY_NAME_LIMIT = 100;

interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
}

interface CreatedKey extends Omit<ApiKey, "last_used_at"> {
  key: string;
}

/** API keys for machine clients: list, create (the key shown once), revoke. A server in
 * local mode has no keys (nor sign-in): the page says so instead of asking for them. */
export function ApiKeysPage() {
  return authMode() === "local" ? <NoKeysInLocalMode /> : <ApiKeys />;
}

function NoKeysInLocalMode() {
  return (
    <section>
      <h1>API keys</h1>
      <p>
        This server runs in <strong>local mode</strong> (<code>AUTH_MODE=local</code>): there is one user, and
        every request to it acts as that user, so scripts, n8n and the MCP client need no key.
      </p>
      <p className="muted">
        API keys exist when the server signs people in with Google (<code>AUTH_MODE=google</code>): each person
        then makes keys for their own machine clients here.
      </p>
    </section>
  );
}

function ApiKeys() {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [name, setName] = useState("");
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function load() {
    try {
      setKeys(await get<ApiKey[]>("/auth/api-keys"));
    } catch (e) {
      setFailure(describe(e));
    }
  }
  useEffect(() => {
    load();
  }, []);

  async function create(event: FormEvent) {
    event.preventDefault();
    setFailure(null);
    setBusy(true);
    try {
      setCreated(await post<CreatedKey>("/auth/api-keys", { name: name.trim() }));
      setName("");
      await load();
    } catch (e) {
      setFailure(describe(e));
    } finally {
      setBusy(false);
    }
  }

  async function revoke(key: ApiKey) {
    setFailure(null);
    try {
      await del(`/auth/api-keys/${encodeURIComponent(key.id)}`);
      if (created?.id === key.id) setCreated(null);
      await load();
    } catch (e) {
      setFailure(describe(e));
    }
  }

  return (
    <section>
      <h1>API keys</h1>
      <p className="muted">
        For scripts and services (n8n, the <code>learning()</code> client): send one as{" "}
        <code>Authorization: Bearer amk_…</code>. A key acts as you until it is revoked.
      </p>
      {created && (
        <div className="notice created-key" role="status">
          <p>
            <strong>Your new key “{created.name}”.</strong> Copy it now: it is shown this once and cannot be read back.
          </p>
          <p className="row">
            <code className="secret" aria-label="The new API key">
              {created.key}
            </code>
            <CopyButton text={created.key} what="the new API key" />
            <button type="button" className="link" onClick={() => setCreated(null)}>
              Done
            </button>
          </p>
        </div>
      )}
      <form className="create-key" onSubmit={create}>
        <label htmlFor="key-name">Name of a new key</label>
        <div className="row">
          <input
            id="key-name"
            value={name}
            aria-describedby="key-name-count"
            placeholder="n8n, a script, a server…"
            onChange={(e) => setName(e.target.value)}
          />
          <button type="submit" disabled={busy || name.trim() === "" || tooLong(name, KEY_NAME_LIMIT)}>
            Create key
          </button>
        </div>
        <Counter id="key-name-count" length={name.length} limit={KEY_NAME_LIMIT} />
      </form>
      {failure && (
        <Failure
          message={failure}
          onRetry={
            keys === null
              ? () => {
                  setFailure(null);
                  load();
                }
              : undefined
          }
        />
      )}
      {keys === null && !failure && <p aria-live="polite">Loading…</p>}
      {keys?.length === 0 && <p className="muted">No API keys.</p>}
      {keys && keys.length > 0 && (
        <ul className="keys" aria-label="API keys">
          {keys.map((k) => (
            <li key={k.id} className="card key">
              <strong>{k.name}</strong> <code>{k.prefix}…</code>
              <span className="muted small">
                created {new Date(k.created_at).toLocaleString()} ·{" "}
                {k.last_used_at ? `last used ${new Date(k.last_used_at).toLocaleString()}` : "never used"}
              </span>
              <InlineConfirm
                label={`Revoke ${k.name}`}
                text="Revoke"
                what="Revoke this key? Anything using it stops working at once."
                confirmLabel="Revoke"
                onConfirm={() => revoke(k)}
              />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
