/** API keys (list, create shown once, revoke): part 2 of issue 16. */
export function ApiKeysPage() {
  return (
    <section>
      <h1>API keys</h1>
      <p className="muted">API keys are not built yet.</p>
    </section>
  );
}
