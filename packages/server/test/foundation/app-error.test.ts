import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../src/errors.js';

const frames = (error: Error) => (error.stack ?? '').split('\n').filter((l) => l.includes(' at '));

describe('AppError', () => {
  it('a client error (4xx) is an answer and carries no stack trace; a server error keeps its own', () => {
    const limit = Error.stackTraceLimit;
    const refused = new AppError('rate_limited', 'Rate limit exceeded');
    assert.deepEqual(frames(refused), []);
    assert.equal(refused.status, 429);
    assert.equal(refused.message, 'Rate limit exceeded');
    const fault = (function failing() {
      return new AppError('service_unavailable', 'Database unreachable');
    })();
    assert.ok(
      frames(fault).some((l) => l.includes('failing')),
      fault.stack,
    );
    assert.equal(Error.stackTraceLimit, limit, 'the process-wide limit is left as it was');
    assert.ok(frames(new Error('plain')).length > 0, 'other errors keep their traces');
  });
});
