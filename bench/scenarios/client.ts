import type { BenchOptions } from '../lib/options.js';
import type { ValueRow } from '../lib/report.js';
import type { Fixture } from './fixture.js';

export interface ClientContext {
  fixture: Fixture;
  baseUrl: string;
  caFile: string;
  root: string;
  options: BenchOptions;
  say: (text: string) => void;
}

/** Client-side measurements (SDK and CLI against the running server). */
export interface ClientScenario {
  id: string;
  title: string;
  needs: string;
  run(ctx: ClientContext): Promise<Omit<ValueRow, 'id' | 'backend'> | null>;
}

export const CLIENT_SCENARIOS: ClientScenario[] = [];
