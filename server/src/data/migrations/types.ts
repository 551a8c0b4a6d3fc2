export type Sql = (sql: string) => Promise<unknown>;
export interface Migration {
  name: string;
  up(q: Sql): Promise<void>;
}
