// Types of import-rules.js for the TypeScript that reads it (test/unit/import-graph.test.ts).
export interface ImportRule {
  imports: string[];
  typeOnly?: string[];
  contracts?: boolean;
  packages?: string[];
  typeOnlyPackages?: string[];
  enforced?: boolean;
  why: string;
}
export declare const importRules: Record<string, ImportRule>;
