import { Link } from "../router";
import { howUsed, sourceHref, usedSummary } from "../sources";
import type { Source, Sources } from "../types";

/** Under a reply: "Used 2 memories · 1 past message", opening to the list of them, each a
 * link to where it is shown (a memory in the inspector, a message in its conversation). */
export function UsedSources({ agentId, conversationId, sources }: { agentId: string; conversationId?: string; sources: Sources }) {
  const summary = usedSummary(sources);
  if (summary === null) return null;
  return (
    <details className="sources">
      <summary>{summary}</summary>
      <ul aria-label="What this reply used">
        {sources.items.map((s) => (
          <li key={`${s.kind}-${s.id}`}>
            <SourceLink href={sourceHref(agentId, s, conversationId)} source={s} />
            <div className="muted small">{howUsed(s)}</div>
          </li>
        ))}
      </ul>
      {sources.left_out > 0 && <p className="muted small">And {sources.left_out} more, not listed.</p>}
      {sources.blocks.length > 0 && (
        <p className="muted small">
          Core memory in the prompt: {sources.blocks.map((b) => `${b.label} (version ${b.version})`).join(", ")}
        </p>
      )}
    </details>
  );
}

function SourceLink({ href, source }: { href: string; source: Source }) {
  const text = source.preview || "(empty)";
  // A message on this page is a fragment of it: the browser scrolls to it and marks it.
  if (href.startsWith("#")) return <a href={href}>{text}</a>;
  return <Link href={href}>{text}</Link>;
}
