/** Provider settings from GET /settings/providers/schema: part 2 of issue 16. */
export function SettingsPage() {
  return (
    <section>
      <h1>LLM providers</h1>
      <p className="muted">Provider settings are not built yet; the offline model needs none.</p>
    </section>
  );
}
