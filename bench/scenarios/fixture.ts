import { generateBearer, ready } from '@coffer/sdk';

/**
 * What the scenarios run against, set up through the real API and SDK: a user,
 * a project with its vault, secrets encrypted client-side, an API key with
 * grants, members by invitation.
 */
export interface Fixture {
  /** A well-formed API key bearer that no server issued (401). */
  unknownBearer: string;
}

export async function createFixture(_opts: {
  baseUrl: string;
  caFile: string | null;
  say: (text: string) => void;
}): Promise<Fixture> {
  await ready();
  return { unknownBearer: generateBearer('cek_') };
}
