/** The slice of s3rver (a local S3-compatible server, a devDependency without types) the tests use. */
declare module 's3rver' {
  interface S3rverOptions {
    port?: number;
    address?: string;
    silent?: boolean;
    /** Whether a request's host name is taken as its bucket (true by default): false, for addressing by path only. */
    vhostBuckets?: boolean;
    directory: string;
    configureBuckets?: { name: string; configs: unknown[] }[];
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
