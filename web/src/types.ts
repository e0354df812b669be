// The API's answers the pages read (api/*/schemas.py).
import type { FormField } from "./forms/schema";

export interface Agent {
  id: string;
  name: string;
  architecture: string;
  provider: string;
  model: string;
  persona: string;
  event_expiry_days: number;
  recent_turns: number;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  /** When its last turn ended (or messages were stored for it); null before. GET /agents lists the last used first. */
  last_used_at: string | null;
  /** The ids of the agents it asks, each through a tool `ask_<name>` (docs/agents-together.md). */
  specialists?: string[];
}

export interface AgentForm {
  fields: FormField[];
  models: Record<string, string[]>;
  notes: Record<string, string>;
}

export interface Conversation {
  id: string;
  agent_id: string;
  /** The session id that leads to it (POST /chat's); its own id unless a client's session opened it. */
  session_id: string;
  title: string;
  created_at: string;
  updated_at: string;
  /** When its last turn ended or messages were stored in it (its creation before): GET /conversations lists the latest first. */
  last_activity_at: string;
}

export interface ToolCall {
  id?: string;
  call_id?: string;
  name: string;
  arguments: unknown;
}

export interface Message {
  id: string;
  role: "user" | "assistant" | "tool" | "system";
  content: string;
  actor_id: string | null;
  tool_calls: ToolCall[];
  tool_call_id: string | null;
  interrupted: boolean;
  /** The turn that made it (GET /runs/{id}: what the turn used); none outside a turn. */
  run_id?: string | null;
  created_at: string;
}

/** An archival memory or a past message that entered a turn's context (docs/sse.md). */
export interface Source {
  kind: "archival" | "message";
  id: string;
  via: string;
  score: number | null;
  similarity: number | null;
  preview: string;
  conversation_id: string | null;
}

/** What a turn used: its `context.used` event, and its run's `sources`. */
export interface Sources {
  items: Source[];
  blocks: { label: string; version: number }[];
  left_out: number;
}

export interface Run {
  run_id: string;
  state: "running" | "completed" | "failed" | "interrupted";
  sources: Sources | null;
}

export interface ConversationPage {
  conversations: Conversation[];
  cursor: string | null;
}

export interface MessagePage {
  messages: Message[];
  cursor: string | null;
}
