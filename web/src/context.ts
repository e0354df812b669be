// GET /agents/{id}/context: what the agent's next turn sends the model, by part.

import { get } from "./api";

export type PartName = "system" | "blocks" | "recent_turns" | "recalled" | "message" | "tools";

export interface ContextItem {
  name: string;
  text: string;
  tokens: number;
  id: string | null;
  via: string | null;
}

export interface ContextPart {
  name: PartName;
  tokens: number;
  count: number;
  text: string;
  items: ContextItem[];
}

export interface TurnContext {
  agent_id: string;
  session_id: string | null;
  provider: string;
  model: string;
  architecture: string;
  prompt_known: boolean;
  parts: ContextPart[];
  total_tokens: number;
  estimated: boolean;
  context_window: number | null;
  percent_used: number | null;
}

export const PART_LABELS: Record<PartName, string> = {
  system: "System prompt",
  blocks: "Core memory blocks",
  recent_turns: "Recent turns",
  recalled: "Recalled memories",
  message: "Your message",
  tools: "Tools",
};

export function loadContext(agentId: string, sessionId: string | null, prompt: string): Promise<TurnContext> {
  const query = new URLSearchParams();
  if (sessionId) query.set("session_id", sessionId);
  if (prompt) query.set("prompt", prompt);
  const tail = query.size ? `?${query}` : "";
  return get<TurnContext>(`/agents/${encodeURIComponent(agentId)}/context${tail}`);
}

/** Each part's share of the bar: of the window when it is known, else of the total. */
export function shares(context: TurnContext): { name: PartName; percent: number }[] {
  const whole = context.context_window ?? context.total_tokens;
  return context.parts.map((p) => ({ name: p.name, percent: whole > 0 ? (100 * p.tokens) / whole : 0 }));
}
