/**
 * The form's inputs and the CLI's flags come from the kinds' declarations
 * alone: a kind added to the list (here two made up for the test) brings
 * its fields, its help and what it makes, with no other edit.
 */
import { describe, expect, it } from 'vitest';
import type { DestinationKind } from '../../stores/port-destinations.js';
import { kindChoice, madeOnce, offeredFields, shownConfig, whereTo } from './destination-fields.js';

const never = (): never => {
  throw new Error('not used');
};

function kind(name: string, o: Partial<DestinationKind>): DestinationKind {
  return { name, about: `to a ${name}`, fields: [], made: [], docs: name, example: '', configure: never, check: never, sender: never, ...o };
}

const hidden = (v: string) => `${v.slice(0, 3)}***`;
const queue = kind('queue', {
  fields: [
    { name: 'url', label: 'URL', help: 'amqp://host/vhost', flag: '--url <url>', required: true, secret: true, mask: hidden },
    { name: 'topic', label: 'Topic', help: 'the topic', flag: '--topic <name>', required: true, secret: false },
  ],
  made: [{ name: 'token', prefix: 'tok_', label: 'access token', use: 'give it to the consumer' }],
});
const bucket = kind('bucket', {
  fields: [
    { name: 'url', label: 'URL', help: 's3://bucket/prefix', flag: '--url <url>', required: true, secret: true, mask: hidden },
    { name: 'key', label: 'Access key', help: 'its access key', flag: '--key <key>', required: false, secret: true },
  ],
});

describe('destination fields from the kinds', () => {
  it('one field per name: helps joined when every kind has it, said for its kinds when some have it', () => {
    expect(offeredFields([queue, bucket])).toEqual([
      { name: 'url', label: 'URL', flag: '--url <url>', kinds: ['queue', 'bucket'], help: 'amqp://host/vhost, or s3://bucket/prefix', required: true, secret: true },
      { name: 'topic', label: 'Topic', flag: '--topic <name>', kinds: ['queue'], help: 'queue: the topic', required: false, secret: false },
      { name: 'key', label: 'Access key', flag: '--key <key>', kinds: ['bucket'], help: 'bucket: its access key', required: false, secret: true },
    ]);
    expect(kindChoice([queue, bucket])).toBe('queue or bucket');
  });

  it('a field with choices offers them, joined across the kinds that have it; one some kind takes freely offers none', () => {
    const format = (choices?: string[]) => ({ name: 'format', label: 'Format', help: 'the format', flag: '--format <format>', required: false, secret: false, ...(choices === undefined ? {} : { choices }) });
    const a = kind('a', { fields: [format(['ndjson', 'parquet'])] });
    const b = kind('b', { fields: [format(['csv', 'ndjson'])] });
    const free = kind('free', { fields: [format()] });
    expect(offeredFields([a, b])[0]!.choices).toEqual(['ndjson', 'parquet', 'csv']);
    expect(offeredFields([a, free])[0]).not.toHaveProperty('choices');
    expect(offeredFields([free, a])[0]).not.toHaveProperty('choices');
  });

  it('shows a config as its kind declares: plain, masked, or not at all; where it goes is its first field shown', () => {
    const config = { url: 's3://b/p', key: 'AKIA-secret', token: 'tok_x' };
    expect(shownConfig(bucket, config)).toEqual({ url: 's3:***' });
    expect(shownConfig(queue, { url: 'amqp://h/v', topic: 'events', token: 'tok_x' })).toEqual({ url: 'amq***', topic: 'events' });
    expect(whereTo([queue, bucket], { kind: 'bucket', config })).toBe('s3:***');
    expect(whereTo([queue], { kind: 'bucket', config })).toBe('');
  });

  it('what a kind makes is shown once, from the answer to the creation, with its label and use', () => {
    expect(madeOnce([queue, bucket], { kind: 'queue', id: 'dst_1', token: 'tok_abc' })).toEqual([{ label: 'access token', use: 'give it to the consumer', value: 'tok_abc' }]);
    expect(madeOnce([queue, bucket], { kind: 'bucket', id: 'dst_2', token: 'tok_abc' })).toEqual([]);
  });
});
