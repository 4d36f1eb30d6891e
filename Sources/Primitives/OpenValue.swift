/// A value of an open vocabulary: a wire string (or number) naming one of a set of known values, where a value no one
/// knew of yet is kept in `rawValue`, never rejected. Apple adds enum values every year; error codes, pipeline steps
/// and HTTP methods grow too.
///
/// Each vocabulary is a typealias over its own uninhabited tag, with its known values as static members of an
/// extension, so two vocabularies never compare equal by accident:
///
/// ```swift
/// public typealias ProductType = OpenValue<ProductTypeTag, String>
/// public enum ProductTypeTag {}
/// extension ProductType {
///     public static let consumable = ProductType(rawValue: "Consumable")
/// }
/// ```
public struct OpenValue<Tag, RawValue: Hashable & Sendable & CustomStringConvertible>: RawRepresentable, Hashable,
    Sendable, CustomStringConvertible {
    /// The wire value, known or not.
    public let rawValue: RawValue
    /// Wraps any wire value, known or not.
    public init(rawValue: RawValue) { self.rawValue = rawValue }
    /// The wire value as text.
    public var description: String { rawValue.description }
}
