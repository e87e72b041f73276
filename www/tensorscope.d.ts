// Types of the JSON contract the functions of tensorscope.mjs resolve to (the same as the
// `tensorscope` command line's `--json`). Non-finite floats are the strings "NaN", "Infinity"
// and "-Infinity".

/** A File, a list of Files, a URL (http, https or hf://owner/repo/file) or a list of URLs. */
export type Input = File | FileList | File[] | string | string[];

export type Float = number | 'NaN' | 'Infinity' | '-Infinity';

export type GgufValue =
  | { type: 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'u64' | 'i64'; value: number }
  | { type: 'f32' | 'f64'; value: Float }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'array'; item_type: string; len: number; value: Array<unknown> };

export interface Finding {
  severity: 'error' | 'warning' | 'info';
  code: string;
  message: string;
  file?: number;
  tensor?: string;
}

export interface TensorInfo {
  name: string;
  /** safetensors dtype, GGML type name ("Q4_K"), or "type N" when unknown. */
  dtype: string;
  shape: number[];
  file: number;
  /** Absolute byte offset in its file; null when the header breaks off before the data. */
  offset: number | null;
  nbytes: number;
}

export interface Totals {
  tensors: number;
  params: number;
  bytes: number;
}

export interface Report {
  format: 'safetensors' | 'gguf' | 'pickle';
  kind: 'model' | 'projector' | 'adapter' | 'imatrix' | 'vocab';
  files: Array<{ path: string; size: number; sha256?: string }>;
  metadata: Record<string, string | GgufValue>;
  tensors: TensorInfo[];
  summary: Totals & {
    bits_per_weight: Float;
    by_dtype: Record<string, Totals>;
    quant_mix: Record<string, Totals>;
    overhead_bytes: number;
  };
  estimate: {
    source: string | null;
    architecture: string | null;
    context_length: number | null;
    layers: number;
    kv_layers: number;
    weights_bytes: number;
    projector_bytes: number;
    kv_cache: Array<{ context: number; type: 'f16' | 'q8_0' | 'q4_0'; bytes: number; total_bytes: number }>;
    state_bytes: number;
    unknown: string[];
  };
  findings: Finding[];
  /** check({ scan: true }) only. */
  scan?: Array<{ tensor: string; file: number; values: number; nan: number; inf: number }>;
  /** Pickle checkpoints only: every import the pickles would make. */
  imports?: Array<{ file: number; module: string; name: string; at: number; verdict: 'expected' | 'unknown' | 'dangerous' }>;
}

export interface Histogram {
  tensor: string;
  dtype: string;
  elements: number;
  count: number;
  nan: number;
  inf: number;
  zero: number;
  min: Float;
  max: Float;
  mean: Float;
  std: Float;
  lo: Float;
  hi: Float;
  bins: number[];
}

export interface Diff {
  a: { format: string; files: Array<{ path: string; size: number }> };
  b: { format: string; files: Array<{ path: string; size: number }> };
  tensors: Array<{
    name: string;
    b_name: string | null;
    status: 'same' | 'changed' | 'only_a' | 'only_b';
    a: { dtype: string; shape: number[]; nbytes: number } | null;
    b: { dtype: string; shape: number[]; nbytes: number } | null;
    values?: { compared: number; nmse: Float; cosine: Float; max_abs: Float };
  }>;
  metadata: Array<{ key: string; status: 'changed' | 'only_a' | 'only_b'; a: unknown; b: unknown }>;
  summary: { same: number; changed: number; only_a: number; only_b: number };
}

/** `tensorscope repo --json`. */
export interface Repo {
  repo: string;
  /** The commit read (null for files). */
  revision: string | null;
  /** Smallest first. */
  variants: Array<{
    name: string;
    format: 'gguf' | 'safetensors' | 'pickle';
    kind: string;
    files: string[];
    bytes: number;
    params: number;
    bits_per_weight: Float;
    file_type: string | null;
    estimate: Report['estimate'];
    findings: { errors: number; warnings: number };
  }>;
  companions: Array<{ name: string; kind: string; files: string[]; bytes: number; fits: string[] }>;
  other_files: string[];
}

export function inspect(input: Input): Promise<Report>;
export function check(input: Input, options?: { sha256?: boolean; scan?: boolean }): Promise<Report>;
export function histogram(
  input: Input,
  tensor: string,
  options?: { bins?: number; sample?: number; elements?: [number, number] },
): Promise<Histogram>;
export function diff(a: Input, b: Input, options?: { values?: 'none' | 'sample' | 'all' }): Promise<Diff>;
export function repo(source: string | File[] | FileList, options?: { endpoint?: string }): Promise<Repo>;
