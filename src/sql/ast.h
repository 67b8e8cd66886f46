/*
 * sql/ast.h - syntax tree of a Sluice program, as written (names not yet
 * resolved). Built by the parser (parse*.c) in the plan arena; read by the
 * planner (compile.c, plan*.c).
 * Every node carries the line and column where it starts, for messages.
 */
#ifndef SL_SQL_AST_H
#define SL_SQL_AST_H

#include "../base/base.h"
#include "../expr/types.h"

typedef enum AstKind {
    A_COL,      /* name, optional qual: [qual.]name */
    A_STAR,     /* * or qual.* (select list, COUNT(*)); with a: (a).*, a
                   struct's fields (select list) */
    A_INT,      /* integer literal: text in str */
    A_NUM,      /* numeric literal with '.' or exponent: text in str */
    A_STR,      /* 'string' (unescaped) in str/slen */
    A_NULL,
    A_BOOL,     /* ival 0/1 */
    A_TYPED,    /* DATE 'x', TIME 'x', TIMESTAMP 'x': type + str; INTERVAL 'x'
                   unit [TO unit]: type TK_INTERVAL_*, ival = from | (to+1) << 8
                   (TimeUnit, expr/text.h) */
    A_BIN,      /* op (AstOp), a, b */
    A_UN,       /* op: OP_NEG, OP_NOT, OP_PLUS; a */
    A_FUNC,     /* name, args; distinct; star for COUNT(*) */
    A_CASE,     /* a = operand (simple CASE) or NULL; args = when,then,...; b = else;
                   ival 1: made of agg(x) FILTER (WHERE c) (parse_expr.c) */
    A_CAST,     /* a, type */
    A_BETWEEN,  /* a BETWEEN b AND c; negated */
    A_IN,       /* a IN (args); negated */
    A_ISNULL,   /* a IS [NOT] NULL; negated */
    A_ISBOOL,   /* a IS [NOT] TRUE/FALSE: ival = 1 TRUE / 0 FALSE; negated */
    A_LIKE,     /* a [NOT] LIKE b [ESCAPE c]; negated; ival 1 for ILIKE */
    A_EXTRACT,  /* EXTRACT(name FROM a) */
    A_SUBQUERY, /* (SELECT ...) in an expression (scalar subquery) */
    A_EXISTS,   /* EXISTS (SELECT ...): sub */
    A_DISTINCT, /* a IS [NOT] DISTINCT FROM b; negated for NOT DISTINCT */
} AstKind;

typedef enum AstOp {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_CONCAT,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
    OP_AND, OP_OR,
    OP_NEG, OP_NOT, OP_PLUS,
} AstOp;

typedef struct Ast Ast;
typedef struct AstList {
    Ast **v;
    int n, cap;
} AstList;

struct Select;

struct Ast {
    AstKind k;
    int line, col;
    int op;            /* AstOp */
    char *name;        /* column / function / extract field */
    char *qual;        /* qualifier of a column or star */
    char *str;         /* literal text (NUL-terminated) */
    size_t slen;
    int64_t ival;      /* A_BOOL 0/1; A_FUNC "row": 1 when written (a, b) without ROW */
    bool negated, distinct, star;
    SqlType type;      /* CAST / typed literal target */
    Ast *a, *b, *c;
    AstList args;
    struct Select *sub; /* A_SUBQUERY, A_EXISTS, A_IN (x IN (SELECT ...)) */
    int subcol;         /* subquery expressions: 1 + the column holding its value
                           (set by the planner, plan_subq.c), 0 until then */
    struct WinDef *over; /* A_FUNC with OVER (...): a window function */
    struct OrderItem *order; /* A_FUNC: agg(args ORDER BY ...) or, with within,
                                agg(args) WITHIN GROUP (ORDER BY ...) */
    int norder;
    bool within;
    int order_line, order_col; /* of the ORDER or WITHIN keyword */
    bool ignore_nulls;  /* A_FUNC: fn(...) IGNORE NULLS (window functions) */
    int ignore_line, ignore_col;
    int height;         /* levels of the tree below and including this node
                           (parse.c; 0 until computed) */
};

/* Limits that keep every recursive pass over a program (parser, binder,
   planner, expression evaluation) far from the end of the smallest thread
   stack we compile or evaluate on (8 MiB by default, ASan builds included):
   deeper input is an error "expression nested too deeply (limit N)" at its
   line and column, never a crash. SQL_MAX_NESTING bounds nested
   parentheses, subqueries, function calls, CASE, unary minus and NOT (the
   parser's own recursion); SQL_MAX_HEIGHT bounds the height of an
   expression tree, which a chain of binary operators such as a + b + ...
   grows by one per operator. Chains of AND and of OR are parsed into
   balanced trees, so thousands of conjuncts stay shallow. */
#define SQL_MAX_NESTING 1000
#define SQL_MAX_HEIGHT 10000
/* Queries within one another (subqueries, and common table expressions
   that use one another), bounded by the planner: each level costs it a few
   KiB of stack. */
#define SQL_MAX_QUERY_NESTING 500
/* Relations joined in one FROM clause (tables, subqueries, the items of
   JOINs and of the comma list): planning a join costs time and memory
   quadratic in its width (every join node carries the columns of the
   relations before it). SQLite allows 64, MySQL 61. */
#define SQL_MAX_FROM 500

typedef enum FromKind { F_TABLE, F_JOIN, F_SUBQUERY, F_NODE, F_TVF, F_UNNEST } FromKind;
typedef enum JoinKind { J_INNER, J_CROSS, J_LEFT, J_RIGHT, J_FULL } JoinKind;

typedef struct FromItem {
    FromKind k;
    int line, col;
    char *name;              /* F_TABLE */
    char *alias;             /* F_TABLE / F_SUBQUERY */
    struct FromItem *l, *r;  /* F_JOIN */
    JoinKind jk;
    bool natural;
    Ast *on;                 /* F_JOIN ON condition, or NULL */
    bool asof;               /* F_JOIN: [LEFT] ASOF JOIN (jk J_INNER or J_LEFT) */
    Ast *match;              /* its MATCH_CONDITION (...), or NULL (then in ON) */
    bool temporal;           /* F_JOIN: [LEFT] JOIN r FOR SYSTEM_TIME AS OF x: an ASOF
                                join on r's time column (asof set; plan_asof.c) */
    Ast *as_of;              /* F_TABLE: its FOR SYSTEM_TIME AS OF expression */
    int as_of_line, as_of_col; /* of its FOR keyword */
    char **using_cols;       /* F_JOIN USING (...) */
    int nusing;
    struct Select *sub;      /* F_SUBQUERY (also VALUES in FROM) */
    int node;                /* F_NODE: an already planned relation (the outer
                                rows of a correlated subquery, plan_subq.c) */
    void *scope;             /* F_NODE: its Scope */
    char **col_aliases;      /* AS alias (c1, c2, ...): renames the first columns */
    int ncol_aliases;
    /* F_TVF: TABLE(name(TABLE input, DESCRIPTOR(tvf_col), args...)), name
       "tumble" or "hop" (plan_tvf.c) */
    struct FromItem *tvf_input; /* an F_TABLE item */
    char *tvf_col;
    int tvf_col_line, tvf_col_col;
    AstList tvf_args;
    /* F_UNNEST: [LATERAL] UNNEST(unnest_e) [WITH ORDINALITY], in a FROM list or
       an inner join or the right of LEFT JOIN ... ON (plan.c) */
    Ast *unnest_e;
    bool ordinality;
    AstList unnest_more; /* UNNEST(e, e2, ...): the arrays after the first (zipped) */
    bool unnest_outer;   /* set by the planner for LEFT JOIN UNNEST(...) ON ... */
    Ast *unnest_on;      /* that ON condition when it is not TRUE (planner) */
} FromItem;

typedef struct SelectItem {
    Ast *e;        /* NULL only for A_STAR items, which use e too */
    char *alias;
    int line, col;
} SelectItem;

typedef struct OrderItem {
    Ast *e;
    bool desc;
    int nulls; /* 0 default (NULL is the smallest value), 1 FIRST, 2 LAST */
} OrderItem;

/* OVER (PARTITION BY ... ORDER BY ... [ROWS|RANGE frame]) of a window
   function (plan_window.c). Frame bounds use circuit.h's FrameBound order:
   0 UNBOUNDED PRECEDING, 1 n PRECEDING, 2 CURRENT ROW, 3 n FOLLOWING,
   4 UNBOUNDED FOLLOWING. */
typedef struct WinDef {
    int line, col;
    AstList part;
    OrderItem *order;
    int norder;
    int frame;          /* 0 none (the default frame), 1 ROWS, 2 RANGE, 3 GROUPS */
    int exclude;        /* FrameExclude: EXCLUDE CURRENT ROW | GROUP | TIES */
    int exclude_line, exclude_col;
    int frame_line, frame_col;
    int start, end;     /* bound kinds */
    Ast *start_n, *end_n; /* n of n PRECEDING / FOLLOWING */
    char *ref;          /* OVER w / OVER (w ...): the named window, until the
                           parser resolves it (parse_query.c) */
    bool ref_paren;     /* OVER (w ...), not OVER w */
    int ref_line, ref_col;
} WinDef;

/* WINDOW name AS (spec) of a SELECT. */
typedef struct NamedWin {
    char *name;
    WinDef *w;
} NamedWin;

typedef enum SetOp {
    SET_NONE, SET_UNION_ALL, SET_UNION, SET_EXCEPT, SET_INTERSECT,
    SET_EXCEPT_ALL, SET_INTERSECT_ALL,
} SetOp;

/* WITH name [(c1, ...)] AS (query): a common table expression. */
typedef struct Cte {
    char *name;
    char **col_aliases;
    int ncol_aliases;
    struct Select *q;
    int line, col;
    bool recursive;     /* WITH RECURSIVE (plan_rec.c) */
} Cte;

typedef struct Select {
    int line, col;
    bool distinct;
    AstList don;         /* DISTINCT ON (...): its expressions (distinct false) */
    SelectItem *items;
    int nitems;
    FromItem **from;   /* comma-separated items */
    int nfrom;
    Ast *where;
    AstList group;
    int **gsets;         /* GROUP BY with ROLLUP/CUBE/GROUPING SETS/(): ngsets
                            grouping sets, each gsetn[i] indexes into group
                            (parse_gsets.c); ngsets 0: a plain GROUP BY */
    int *gsetn;
    int ngsets;
    Ast *having;
    NamedWin *windows;   /* WINDOW w AS (...), ...: nwindows */
    int nwindows;
    Ast *qualify;        /* QUALIFY c: a filter over the window functions' results */
    OrderItem *order;
    int norder;
    Ast *limit, *offset;
    bool with_ties;      /* FETCH ... WITH TIES (limit is its count) */
    int order_line, order_col;
    int limit_line, limit_col; /* of the LIMIT or OFFSET keyword */
    SetOp setop;         /* how `next` combines with this one */
    int setop_line, setop_col; /* of the set operation keyword */
    struct Select *next; /* right operand of the set operation */
    AstList *values;     /* VALUES (row), ...: nvalues rows; no select list/FROM */
    int nvalues;
    Cte *ctes;           /* WITH ... (on the first Select of a query) */
    int nctes;
} Select;

typedef struct ColumnDef {
    char *name;
    SqlType type;
    bool primary_key;
    int line, col;
    Ast *lateness;      /* LATENESS expr (a constant), or NULL */
    int lat_line, lat_col;
} ColumnDef;

typedef struct Property {
    char *key, *value;
    int line, col;     /* of the key */
    int vline, vcol;   /* of the value string (for JSON error positions) */
} Property;

typedef enum StmtKind {
    S_CREATE_TABLE, S_CREATE_VIEW, S_LATENESS, S_CREATE_FUNCTION,
    S_DECLARE_VIEW, /* DECLARE RECURSIVE VIEW name (cols): cols, name */
} StmtKind;

/* A parameter of CREATE FUNCTION. */
typedef struct FuncParam {
    char *name;
    SqlType type;      /* nullable unless declared NOT NULL */
    int line, col;
} FuncParam;

typedef struct Stmt {
    StmtKind k;
    int line, col;
    char *name;
    int name_line, name_col;
    /* table */
    ColumnDef *cols;
    int ncols;
    char **pk;          /* PRIMARY KEY column names (table constraint or column) */
    int npk;
    /* view */
    bool materialized;
    char **col_aliases; /* CREATE VIEW v (a, b) AS ... */
    int ncol_aliases;
    Select *query;
    /* LATENESS name.lat_colname expr; (the statement form) */
    char *lat_colname;
    Ast *lateness;
    /* CREATE FUNCTION name(params) RETURNS fret AS fbody (bind_udf.c) */
    FuncParam *fparams;
    int nfparams;
    SqlType fret;       /* nullable unless RETURNS type NOT NULL */
    Ast *fbody;
    bool fstrict;       /* STRICT / RETURNS NULL ON NULL INPUT */
    size_t text_off, text_len; /* the statement in the program text */
    /* both */
    Property *props;
    int nprops;
} Stmt;

typedef struct Program {
    Stmt **stmts;
    int n;
    int tz; /* session time zone (expr/tz.h id; SET TIME ZONE), 0 = UTC */
    char **types; /* the text of each CREATE TYPE statement, in order */
    int ntypes;
} Program;

struct Arena;
struct Err;
/* Parse a whole program; nodes live in arena a. Returns 0 or SL_EPARSE /
   SL_EUNSUPPORTED with err giving line, column and what was expected. */
int sql_parse(const char *text, struct Arena *a, Program **out, struct Err *err);

#endif
