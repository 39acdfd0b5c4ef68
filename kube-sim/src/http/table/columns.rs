//! Table column definitions (`metav1.TableColumnDefinition`) and the descriptions kube-apiserver gives its
//! common columns.

use jiff::Timestamp;
use serde_json::{Value, json};

/// `ObjectMeta`'s documentation of `name`, the description of every Name column.
pub const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
/// `ObjectMeta`'s documentation of `creationTimestamp`, the description of every Age column.
pub const AGE_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
/// Description of the Containers column of workload printers.
pub const CONTAINERS_DOC: &str = "Names of each container in the template.";
/// Description of the Images column of workload printers.
pub const IMAGES_DOC: &str = "Images referenced by each container in the template.";

/// One column of a built-in printer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Col {
    /// Column name as the Table carries it (`Name`, `Nominated Node`); kubectl upper-cases it.
    pub name: &'static str,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    pub ty: &'static str,
    /// OpenAPI format (`name` for the object-name column).
    pub format: &'static str,
    /// Human description.
    pub description: &'static str,
    /// 0 for the default view, 1 for `-o wide`.
    pub priority: i64,
}

impl Col {
    /// A priority-0 string column.
    pub const fn string(name: &'static str, description: &'static str) -> Self {
        Self {
            name,
            ty: "string",
            format: "",
            description,
            priority: 0,
        }
    }

    /// A priority-0 integer column.
    pub const fn integer(name: &'static str, description: &'static str) -> Self {
        Self {
            ty: "integer",
            ..Self::string(name, description)
        }
    }

    /// The same column shown only with `-o wide`.
    pub const fn wide(self) -> Self {
        Self { priority: 1, ..self }
    }

    /// The JSON column definition.
    pub fn to_json(self) -> Value {
        definition(self.name, self.ty, self.format, self.description, self.priority)
    }
}

/// The object-name column every printer starts with.
pub const NAME: Col = Col {
    format: "name",
    ..Col::string("Name", NAME_DOC)
};
/// The Age column (a human duration since creation).
pub const AGE: Col = Col::string("Age", AGE_DOC);

/// A `metav1.TableColumnDefinition` as JSON (every field present, as kube-apiserver sends it).
pub fn definition(name: &str, ty: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

/// One table row before the object is attached.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    /// Cell values, one per column.
    pub cells: Vec<Value>,
    /// `metav1.TableRowCondition`s (pods that completed), when any.
    pub conditions: Option<Value>,
}

impl From<Vec<Value>> for Row {
    fn from(cells: Vec<Value>) -> Self {
        Self {
            cells,
            conditions: None,
        }
    }
}

/// Builds a row of one object at `now`.
pub type RowFn = fn(&Value, Timestamp) -> Row;

/// A built-in kind's printer, as kube-apiserver registers it for one group/resource.
#[derive(Debug)]
pub struct Printer {
    /// API group (empty for core).
    pub group: &'static str,
    /// Plural resource name.
    pub resource: &'static str,
    /// Column definitions.
    pub columns: &'static [Col],
    /// Row builder.
    pub row: RowFn,
}
